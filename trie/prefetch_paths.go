package trie

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/vertex"
)

// StorageKey names one storage slot: its account's hash and its own.
type StorageKey struct {
	Account, Slot hashkey.Hash
}

// prefetchWorkers is how many backend reads a prefetch has in flight: reads
// wait on the disk, not on a core, so more than the cores keep its queue full.
const prefetchWorkers = 16

// Prefetch reads the trie paths of accounts and slots (the account's path,
// then the slot's in its storage trie) into the vertex cache, so that the
// Account, Storage and update calls on them that follow find them in memory.
// It walks all the paths together, level by level: each level's vertices that
// only the backend holds are read side by side on several goroutines, so the
// disk serves many reads at once instead of one per step of one path.
//
// It is a read: it may run beside other reads of fr, and a write on fr waits
// for it or fails (ErrConcurrentWrite). As a client's prefetcher runs beside
// block execution, call it from another goroutine on the block's parent frame
// (sealed once the block's frame began on it): the paths it caches are the
// persisted ones both frames share. Keys that do not exist cost their path
// down to where it ends.
func (fr *Frame) Prefetch(accounts []hashkey.Hash, slots []StorageKey) error {
	if err := fr.enter(useRead, "prefetch"); err != nil {
		return err
	}
	defer fr.leave(useRead)
	cur := make([]prefetchCursor, 0, len(accounts)+len(slots))
	for i := range accounts {
		cur = append(cur, prefetchCursor{id: vertex.RootID, path: hashkey.AppendNibbles(nil, accounts[i][:])})
	}
	for i := range slots {
		cur = append(cur, prefetchCursor{id: vertex.RootID, path: hashkey.AppendNibbles(nil, slots[i].Account[:]),
			slot: hashkey.AppendNibbles(nil, slots[i].Slot[:])})
	}
	fetched := make(map[vertex.ID]bool) // true: in an earlier round
	for len(cur) > 0 {
		var cold []vertex.ID
		next := cur[:0]
		for i := range cur {
			c := &cur[i]
			waiting, err := fr.advance(c)
			if err != nil {
				return fmt.Errorf("trie: prefetch: %w", err)
			}
			if !waiting {
				continue
			}
			earlier, ok := fetched[c.id]
			if earlier {
				continue // read before and absent, or evicted since: leave it to the reads
			}
			next = append(next, *c)
			if !ok {
				fetched[c.id] = false
				cold = append(cold, c.id)
			}
		}
		if err := fr.db.fetchVertices(cold); err != nil {
			return fmt.Errorf("trie: prefetch: %w", err)
		}
		for _, id := range cold {
			fetched[id] = true
		}
		cur = next
	}
	return nil
}

// prefetchCursor is one path of a prefetch: the next vertex and the nibbles
// left below it, and for a slot the slot's nibbles (nil once in its storage
// trie).
type prefetchCursor struct {
	id         vertex.ID
	path, slot []byte
}

// advance walks c down through the vertices memory holds; it reports whether
// c stopped at a vertex only the backend holds (c.id) rather than at the end
// of its path.
func (fr *Frame) advance(c *prefetchCursor) (waiting bool, err error) {
	for {
		v, ok, err := fr.getWarm(c.id)
		if err != nil || !ok {
			return !ok, err
		}
		if v == nil || !bytes.HasPrefix(c.path, v.Path) {
			return false, nil
		}
		c.path = c.path[len(v.Path):]
		if v.Kind == vertex.Leaf {
			if len(c.path) != 0 || c.slot == nil || v.Acc == nil || v.Acc.Storage == vertex.NoID {
				return false, nil
			}
			c.id, c.path, c.slot = v.Acc.Storage, c.slot, nil
			continue
		}
		if len(c.path) == 0 {
			return false, nil
		}
		if c.id = v.Child(int(c.path[0])); c.id == vertex.NoID {
			return false, nil
		}
		c.path = c.path[1:]
	}
}

// fetchVertices reads the records of ids from the backend into the cache,
// prefetchWorkers at a time. The caller holds db.mu (read): no persist can
// start meanwhile, and ids hold no pending write's vertex (getWarm found
// none), so the records read are current.
func (db *DB) fetchVertices(ids []vertex.ID) error {
	if len(ids) == 0 {
		return nil
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		ferr error
		next = make(chan vertex.ID)
	)
	for range min(prefetchWorkers, len(ids)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range next {
				rec, err := db.backend.Vertex(id)
				if err != nil {
					mu.Lock()
					ferr = vertexError(id, err)
					mu.Unlock()
					continue
				}
				if rec != nil {
					db.cache.Put(id, rec)
				}
			}
		}()
	}
	for _, id := range ids {
		next <- id
	}
	close(next)
	wg.Wait()
	return ferr
}
