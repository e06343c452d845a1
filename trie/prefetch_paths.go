package trie

import (
	"bytes"
	"fmt"
	"runtime"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/vertex"
)

// StorageKey names one storage slot: its account's hash and its own.
type StorageKey struct {
	Account, Slot hashkey.Hash
}

// pinDepth is how far down the account trie Prefetch pins the branches it
// reads in the vertex cache (reccache.Cache.PutPinned): those at most this
// many nibbles below the root. Every account path of a block runs through
// them, but below the first few levels each is read too seldom for the
// cache's first-in-first-out ring to keep it (docs/design.md, "Pinned upper
// levels"). There are at most 16^0 + … + 16^5 ≈ 1.1M of them whatever the
// state's size, ~60 MB of records.
const pinDepth = 5

// Prefetch reads the trie paths of accounts and slots (the account's path,
// then the slot's in its storage trie) into the vertex cache, so that the
// Account, Storage and update calls on them that follow find them in memory.
// It walks all the paths together, level by level: each level's vertices that
// only the backend holds are read side by side on several goroutines, so the
// disk serves many reads at once instead of one per step of one path. In a
// v2 database that keeps each key once, a vertex is read with its slot
// group's siblings, whose keys hashing a write to it will need, and with the
// storage roots of the contracts among them (their leaf keys hold those
// roots' keys). The account trie's branches it reads near the root (pinDepth)
// are pinned in the vertex cache.
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
		cur = append(cur, prefetchCursor{id: vertex.RootID, group: vertex.NoID, path: hashkey.AppendNibbles(nil, accounts[i][:])})
	}
	for i := range slots {
		cur = append(cur, prefetchCursor{id: vertex.RootID, group: vertex.NoID, path: hashkey.AppendNibbles(nil, slots[i].Account[:]),
			slot: hashkey.AppendNibbles(nil, slots[i].Slot[:])})
	}
	// With keys once, hashing the branches that writes to these keys dirty
	// reads their clean children (prefetch.go). So a cold vertex of a v2
	// path is read with its stored siblings: the group read that the hash
	// would otherwise make later, after the block's other reads.
	groups := fr.db.noChild && fr.db.format == vertex.FormatV2
	fetched := make(map[vertex.ID]bool) // true: in an earlier round
	for len(cur) > 0 {
		var cold []readTask
		round := make(map[vertex.ID]uint16) // the groups read this round: their used slots
		// readGroup lists, once a round, the read of the stored slots of
		// the v2 group at base, whose branch uses used.
		readGroup := func(base vertex.ID, used uint16, pin bool) {
			if round[base] != 0 {
				return
			}
			round[base] = used
			if slots := fr.storedSlots(base, used); slots != 0 {
				cold = append(cold, readTask{first: base, used: slots, pin: pin})
			}
		}
		next := cur[:0]
		for i := range cur {
			c := &cur[i]
			waiting, err := fr.advance(c)
			if err != nil {
				return fmt.Errorf("trie: prefetch: %w", err)
			}
			if !waiting {
				if groups && c.id == vertex.NoID && c.group != vertex.NoID {
					// The path ended in a v2 branch the write will change
					// (endAt): read its children for the hash.
					readGroup(c.group, c.used, false)
				}
				continue
			}
			earlier, ok := fetched[c.id]
			if earlier {
				continue // read before and absent, or evicted since: leave it to the reads
			}
			next = append(next, *c)
			if ok {
				continue
			}
			fetched[c.id] = false
			pin := !c.storage && 2*len(hashkey.Hash{})-len(c.path) <= pinDepth // nibbles above c.id
			if !groups || c.group == vertex.NoID {
				cold = append(cold, readTask{first: c.id, pin: pin})
			} else {
				readGroup(c.group, c.used, pin)
			}
		}
		if err := fr.db.readParallel(cold, runtime.GOMAXPROCS(0)); err != nil {
			return fmt.Errorf("trie: prefetch: %w", err)
		}
		if err := fr.prefetchStorageRoots(round); err != nil {
			return fmt.Errorf("trie: prefetch: %w", err)
		}
		for i := range next {
			fetched[next[i].id] = true
		}
		cur = next
	}
	return nil
}

// prefetchStorageRoots reads the storage roots of the contract accounts in
// the slot groups just read (groups: their used slots, by base) that only the
// backend holds.
// Such an account is a clean sibling of a path that a write will dirty, and
// hashing that write recomputes its leaf key, which holds its storage root's
// key: the hash's prefetch (prefetchDirty's second round) would read them
// otherwise, after the block's other reads. With them here, that walk finds
// nothing left to read and the hashes after it skip it (prefetchSkip).
func (fr *Frame) prefetchStorageRoots(groups map[vertex.ID]uint16) error {
	var roots []readTask
	for base, used := range groups {
		for n := 0; n < vertex.BranchSlots; n++ {
			if used&(1<<n) != 0 {
				roots = fr.appendStorageRootRead(roots, base+vertex.ID(n))
			}
		}
	}
	return fr.db.readParallel(roots, runtime.GOMAXPROCS(0))
}

// prefetchCursor is one path of a prefetch: the next vertex and the nibbles
// left below it, and for a slot the slot's nibbles (nil once in its storage
// trie).
type prefetchCursor struct {
	id         vertex.ID
	group      vertex.ID // the v2 base of id's slot group, NoID for none
	used       uint16    // the group's used slots (its branch's Used)
	path, slot []byte
	storage    bool // in a storage trie (path is the slot's)
}

// advance walks c down through the vertices memory holds; it reports whether
// c stopped at a vertex only the backend holds (c.id) rather than at the end
// of its path. A path that ends in a branch (at an empty slot, or off its
// path) ends with endAt.
func (fr *Frame) advance(c *prefetchCursor) (waiting bool, err error) {
	for {
		v, ok, err := fr.getWarm(c.id)
		if err != nil || !ok {
			return !ok, err
		}
		if v == nil {
			return false, nil
		}
		if !bytes.HasPrefix(c.path, v.Path) {
			if v.Kind == vertex.Branch {
				c.endAt(v) // a write splits v's path
			}
			return false, nil
		}
		c.path = c.path[len(v.Path):]
		if v.Kind == vertex.Leaf {
			if len(c.path) != 0 || c.slot == nil || v.Acc == nil || v.Acc.Storage == vertex.NoID {
				return false, nil
			}
			c.id, c.group, c.path, c.slot, c.storage = v.Acc.Storage, vertex.NoID, c.slot, nil, true
			continue
		}
		if len(c.path) == 0 {
			return false, nil
		}
		if c.id = v.Child(int(c.path[0])); c.id == vertex.NoID {
			c.endAt(v) // a write puts a leaf in the empty slot
			return false, nil
		}
		if c.group = vertex.NoID; v.Kids == nil {
			c.group, c.used = v.Base, v.Used
		}
		c.path = c.path[1:]
	}
}

// endAt ends c at branch v, which a write to c's key changes (a leaf put in
// an empty slot, or v's path split by a new branch above it): hashing v then
// needs its other children, so c names v's slot group (c.group, c.used; NoID
// for a v1 branch) with c.id NoID.
func (c *prefetchCursor) endAt(v *node) {
	c.id, c.group, c.used = vertex.NoID, vertex.NoID, 0
	if v.Kids == nil {
		c.group, c.used = v.Base, v.Used
	}
}
