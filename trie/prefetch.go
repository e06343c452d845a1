package trie

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/vertex"
)

// This file batches the reads a hash needs when branch records carry no
// children's keys (vertex.KeysOnce): re-hashing a dirty branch needs the keys
// of its clean children, which are in the store. Left to the hasher, each
// dirty branch reads its children when the walk reaches it, one read after
// another. Before hashing, prefetchDirty walks the dirty vertices (all held in
// the frames: a write owns its path), lists the stored children they need —
// one group read of a v2 branch's stored used slots (readTask), one point
// read per child of a v1 branch — and issues those reads from several goroutines, putting the
// records in the vertex cache; then the storage roots of the clean accounts
// among them, whose keys are their storage roots' keys. The hash that follows
// finds them cached (docs/design.md "Each key once").

// prefetchMin is how many reads a hash must need before they are batched:
// below it the goroutines cost more than they save.
const prefetchMin = 4

// prefetchReaders is how many reads run at once per worker (a core, for
// Frame.Prefetch and PrefetchReads): reads wait on the disk more than they
// use a core, so several per core keep the device busy. Not many more: each
// read costs CPU too (RocksDB's lookup, the kernel's I/O path, a thread
// blocked in cgo that the runtime hands off and wakes), so a disk-bound block
// is CPU-bound on few cores (benchmarks.md §10.15, §10.17).
const prefetchReaders = 4

// prefetchSkip is how many hashes skip the prefetch after one that found
// few reads to make (fewer than prefetchMin, or than one per
// prefetchWalkPerRead vertices walked): with the state in the caches, or
// the block's paths read by Frame.Prefetch, the walk finds next to nothing,
// and it need not be repeated for every hash to notice when that changes.
const prefetchSkip = 7

// prefetchWalkPerRead is how many dirty vertices the walk may visit for each
// read it finds and still be worth repeating: a vertex visited costs about a
// microsecond, a read the hasher makes itself (one at a time) a hundred or
// more. At 10M accounts a block's walk visits ~33k vertices (~35 ms).
const prefetchWalkPerRead = 128

// prefetchDue reports whether the next hash should prefetch, counting down
// the hashes left to skip.
func (db *DB) prefetchDue() bool {
	for {
		n := db.prefetchIdle.Load()
		if n <= 0 {
			return true
		}
		if db.prefetchIdle.CompareAndSwap(n, n-1) {
			return false
		}
	}
}

// readTask is one read of a prefetch: the record of first, or with used the
// slots of the v2 group at first that used marks (those of its branch's used
// slots that only the store holds, storedSlots: a point lookup each, in one
// batch, which an LSM store answers from the levels that hold them where a
// range read reads a block in every level); with pin, the branches among
// them are pinned in the cache (Prefetch's pinDepth).
type readTask struct {
	first vertex.ID
	used  uint16
	pin   bool
}

// stored reports whether id's record must come from the store: the frames and
// the pending write do not hold it and the cache does not either.
func (fr *Frame) stored(id vertex.ID) bool {
	_, ok := fr.lookupFrames(id)
	return !ok && !fr.db.cache.Contains(id)
}

// storedSlots returns the slots of used, of the v2 slot group at base, whose
// records must come from the store (stored): a group read asks for those
// only, not for a slot the frames, the pending write or the cache hold.
func (fr *Frame) storedSlots(base vertex.ID, used uint16) uint16 {
	var out uint16
	for n := 0; n < vertex.BranchSlots; n++ {
		if used&(1<<n) != 0 && fr.stored(base+vertex.ID(n)) {
			out |= 1 << n
		}
	}
	return out
}

// prefetchDirty loads into the cache the stored records that hashing the
// dirty vertices under id will read (see above), when there are at least
// prefetchMin reads to make. A walk that finds few (see prefetchSkip) makes
// the next prefetchSkip hashes skip it. Errors are the backend's; a record
// that fails to decode is left for the hasher to report.
func (fr *Frame) prefetchDirty(id vertex.ID, workers int) error {
	var tasks []readTask
	// accts is the clean children in the account trie that the first round
	// reads: the accounts among them need their storage roots. A storage
	// trie's children are never accounts, so the walk notes which trie each
	// vertex is in. (An account the cache holds was cached with its storage
	// root, by Prefetch or an earlier hash; the hasher reads a root evicted
	// since.)
	var accts []vertex.ID
	visited := 0
	type dirtyVertex struct {
		id      vertex.ID
		storage bool
	}
	stack := []dirtyVertex{{id: id, storage: id != vertex.RootID}} // a storage root otherwise
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		visited++
		v, ok := fr.lookupFrames(d.id)
		if !ok || v == nil || !v.Key.IsVoid() {
			continue // stored (clean), deleted, or hashed already
		}
		if v.Kind == vertex.Leaf {
			if v.Payload == vertex.AccountPayload {
				switch s := storageRootToRead(v.Acc.Storage, v.Acc.StorageKey != (hashkey.Hash{})); {
				case s == vertex.NoID: // no storage, or its root recorded in the leaf
				case fr.stored(s):
					tasks = append(tasks, readTask{first: s})
				default:
					stack = append(stack, dirtyVertex{id: s, storage: true})
				}
			}
			continue
		}
		need := v.Used
		if v.ChildKeys != nil {
			need &= v.stale | ^v.ChildKeys.Used()
		}
		var group uint16 // v2: the slots to read
		for n := 0; n < 16; n++ {
			if need&(1<<n) == 0 {
				continue
			}
			c := v.Child(n)
			if _, ok := fr.lookupFrames(c); ok {
				stack = append(stack, dirtyVertex{id: c, storage: d.storage})
				continue
			}
			if fr.db.cache.Contains(c) {
				continue
			}
			if !d.storage {
				accts = append(accts, c)
			}
			if v.Kids != nil {
				tasks = append(tasks, readTask{first: c})
			} else {
				group |= 1 << n
			}
		}
		if group != 0 {
			tasks = append(tasks, readTask{first: v.Base, used: group})
		}
	}
	if len(tasks) < prefetchMin || len(tasks)*prefetchWalkPerRead < visited {
		fr.db.prefetchIdle.Store(prefetchSkip)
	}
	if len(tasks) < prefetchMin {
		return nil
	}
	if err := fr.db.readParallel(tasks, workers); err != nil {
		return err
	}
	// Round two: the storage roots of the clean accounts just read.
	tasks = tasks[:0]
	for _, c := range accts {
		tasks = fr.appendStorageRootRead(tasks, c)
	}
	if len(tasks) < prefetchMin {
		return nil
	}
	return fr.db.readParallel(tasks, workers)
}

// appendStorageRootRead appends to tasks the read of the storage root of id
// when id's cached record is a contract account whose storage root only the
// backend holds and its record does not carry.
func (fr *Frame) appendStorageRootRead(tasks []readTask, id vertex.ID) []readTask {
	s := vertex.NoID
	// Nothing else of the cache in the callback: Get holds its shard.
	fr.db.cache.Get(id, func(rec []byte) error {
		s = storageOf(rec)
		return nil
	})
	if s != vertex.NoID && fr.stored(s) {
		tasks = append(tasks, readTask{first: s})
	}
	return tasks
}

// storageOf returns storageRootToRead of an account leaf's record, NoID for
// any other record (or one whose storage fields do not parse: the hasher's
// decode reports what is wrong with it). It reads the record's storage fields in place (vertex.AccountStorage): it
// runs under the cache's shard lock, once per account a group read returns.
func storageOf(rec []byte) vertex.ID {
	s, recorded, ok := vertex.AccountStorage(rec)
	if !ok {
		return vertex.NoID
	}
	return storageRootToRead(s, recorded)
}

// storageRootToRead returns the ID of the storage root that hashing the leaf
// of an account with storage trie s must read: s, unless the leaf records
// the root (vertex.Account.StorageKey); NoID for an account without storage.
func storageRootToRead(s vertex.ID, rootRecorded bool) vertex.ID {
	if rootRecorded {
		return vertex.NoID
	}
	return s
}

// readParallel runs the reads of tasks on workers × prefetchReaders
// goroutines and caches the records they return (unless the cache or the
// pending write holds a version, which may be newer or carry keys the record
// lacks). The caller holds db.mu.
func (db *DB) readParallel(tasks []readTask, workers int) error {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	readers := min(len(tasks), workers*prefetchReaders)
	var next atomic.Int64
	errs := make([]error, readers)
	var wg sync.WaitGroup
	for r := 0; r < readers; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			ids := make([]vertex.ID, 0, vertex.BranchSlots) // readInto's, for all of this reader's tasks
			for {
				i := int(next.Add(1) - 1)
				if i >= len(tasks) {
					return
				}
				if errs[r] = db.readInto(tasks[i], ids); errs[r] != nil {
					return
				}
			}
		}(r)
	}
	wg.Wait()
	return errors.Join(errs...)
}

// cacheRead caches the record of id just read from the backend, pinned if pin
// is set and it is a branch's, unless the cache holds a version, which may
// carry keys the record lacks, or the pending write does, which is newer.
// Like every cached record it is checked when decoded.
func (db *DB) cacheRead(id vertex.ID, rec []byte, pin bool) {
	if !db.inPending(id) {
		db.cache.PutAbsent(id, rec, pin && vertex.RecordKind(rec) == vertex.Branch)
	}
}

// readInto reads one task's records into the cache, listing a group's IDs
// in ids (room for vertex.BranchSlots, reused from task to task: handed to
// the backend, an array of readInto's own would be allocated per read).
func (db *DB) readInto(t readTask, ids []vertex.ID) error {
	if t.used != 0 {
		ids = ids[:0]
		for n := 0; n < vertex.BranchSlots; n++ {
			if t.used&(1<<n) != 0 {
				ids = append(ids, t.first+vertex.ID(n))
			}
		}
		err := db.backend.Vertices(ids, func(i int, rec []byte) error {
			if rec != nil {
				db.cacheRead(ids[i], rec, t.pin)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("trie: reading children of branch at base %d: %w", t.first, err)
		}
		return nil
	}
	rec, err := db.backend.Vertex(t.first)
	if err != nil {
		return vertexError(t.first, err)
	}
	if rec != nil {
		db.cacheRead(t.first, rec, t.pin)
	}
	return nil
}
