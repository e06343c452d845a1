package trie

import (
	"context"
	"errors"
	"fmt"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/vertex"
)

// A whole state's leaf-index entries in key order, from the trie: what
// BuildLeafIndex writes and what the check compares the index with.

// errStopWalk stops a walk early without being an error.
var errStopWalk = errors.New("trie: walk stopped")

// eachLeafEntry calls fn, in ascending key order, with the index entry of
// every account and slot of the state the backend holds (an account's slots
// follow it). It reads the backend itself, not through the vertex cache (a
// v2 branch's children with one range read), on workers goroutines (see
// leafindex_walk_parallel.go; fn is called from the caller's); the caller
// holds db.mu with no write pending. key and val are only valid during the
// call.
func (db *DB) eachLeafEntry(ctx context.Context, workers int, fn func(key, val []byte) error) error {
	w := leafWalk{db: db, ctx: ctx, fn: fn}
	v, err := w.read(vertex.RootID, false)
	if err != nil || v == nil {
		return err
	}
	if workers > 1 && v.Kind == vertex.Branch {
		return db.eachLeafEntryParallel(ctx, v, workers, leafPartLevels(db.base.alloc.Top), fn)
	}
	return w.walk(v, nil, nil)
}

type leafWalk struct {
	db  *DB
	ctx context.Context
	fn  func(key, val []byte) error
	val []byte
	n   int
}

// read returns stored vertex id; must says it is referenced.
func (w *leafWalk) read(id vertex.ID, must bool) (*node, error) {
	rec, err := w.db.backend.Vertex(id)
	switch {
	case err != nil:
		return nil, vertexError(id, err)
	case rec == nil && must:
		return nil, vertexError(id, ErrMissingVertex)
	case rec == nil:
		return nil, nil
	}
	return w.db.decode(id, rec)
}

// children returns the stored children of branch v, by slot.
func (w *leafWalk) children(v *node) (*[16]*node, error) {
	var kids [16]*node
	if v.Kids != nil { // v1: scattered IDs
		for n, id := range v.Kids {
			if v.Used&(1<<n) != 0 {
				c, err := w.read(id, true)
				if err != nil {
					return nil, err
				}
				kids[n] = c
			}
		}
		return &kids, nil
	}
	err := w.db.backend.VertexRange(v.Base, vertex.BranchSlots, func(id vertex.ID, rec []byte) error {
		if n := id - v.Base; v.Used&(1<<n) != 0 {
			c, err := w.db.decode(id, rec)
			kids[n] = c
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for n := range 16 {
		if v.Used&(1<<n) != 0 && kids[n] == nil {
			return nil, vertexError(v.Base+vertex.ID(n), ErrMissingVertex)
		}
	}
	return &kids, nil
}

// walk visits the sub-trie of v (at nibble path prefix, in owner's storage
// trie or, owner nil, the account trie).
func (w *leafWalk) walk(v *node, prefix []byte, owner *hashkey.Hash) error {
	if w.n++; w.n&4095 == 0 {
		if err := w.ctx.Err(); err != nil {
			return err
		}
	}
	if v.Kind == vertex.Branch {
		kids, err := w.children(v)
		if err != nil {
			return err
		}
		for n, c := range kids {
			if c != nil {
				if err := w.walk(c, append(append(prefix[:len(prefix):len(prefix)], v.Path...), byte(n)), owner); err != nil {
					return err
				}
			}
		}
		return nil
	}
	var kb [64]byte
	key, ok := appendLeafKey(kb[:0], prefix, v.Path, owner)
	if !ok || (v.Payload != vertex.AccountPayload && v.Payload != vertex.SlotPayload) {
		return nil // a generic trie's leaf: no entry
	}
	w.val = leafValue(w.val[:0], &v.Vertex)
	if err := w.fn(key, w.val); err != nil {
		return err
	}
	if owner == nil && v.Acc.Storage != vertex.NoID {
		h := hashkey.Hash(key)
		s, err := w.read(v.Acc.Storage, true)
		if err != nil {
			return err
		}
		return w.walk(s, nil, &h)
	}
	return nil
}

// leafBuildBytes is about how many bytes of keys and values BuildLeafIndex
// and CopyLeafIndex write per batch: enough for a backend to write each batch
// as files of its own (rocks ingests a sorted batch of Options.IngestBytes,
// 16 MiB by default, into the bottom level of an empty index, so that the
// build leaves nothing to compact), few enough to keep a migration's memory
// bounded.
const leafBuildBytes = 16 << 20

// BuildLeafIndex builds the leaf index of the persisted state from the trie,
// for a database written without one (by hexstate before the index existed,
// or by CopyFrom): until it is built, cold reads walk the trie. It writes in
// batches in key order, the first of which empties the index (unless it is
// empty already) and the last of which marks it complete, so a build cut
// short (by ctx or a crash) leaves an index that is not used, and the next
// build starts over. It holds the database's read
// lock throughout (Persist and Begin wait) and first waits for a pending
// persist. Building the index of a database that has one rebuilds it.
func (db *DB) BuildLeafIndex(ctx context.Context) (entries uint64, err error) {
	return db.writeLeafIndex(nil, func(fn func(key, val []byte) error) error { return db.eachLeafEntry(ctx, db.bulkWorkers(), fn) })
}

// writeLeafIndex replaces the leaf index with the entries each yields in key
// order, as BuildLeafIndex says. check, when not nil, is called once no
// persist can run any more (none pending, db.mu held), before anything is
// written; an error from it is returned.
func (db *DB) writeLeafIndex(check func() error, each func(fn func(key, val []byte) error) error) (entries uint64, err error) {
	db.persistMu.Lock()
	defer db.persistMu.Unlock()
	if err := db.settle(); err != nil {
		return 0, err
	}
	db.mu.Lock()
	if check != nil {
		if err := check(); err != nil {
			db.mu.Unlock()
			return 0, err
		}
	}
	db.leafIdx = false // readers walk the trie until the build is complete
	db.leaves.landed(nil)
	db.mu.Unlock()
	db.mu.RLock()
	if db.closed {
		db.mu.RUnlock()
		return 0, ErrClosed
	}
	// An index that is empty needs no reset: the batches then hold only
	// leaves in key order, which a backend may write as files of their own
	// (a reset would make each overlap it). The marker goes last, alone.
	empty, err := db.leafIndexEmpty()
	if err != nil {
		db.mu.RUnlock()
		return 0, fmt.Errorf("trie: building the leaf index: %w", err)
	}
	b := &vertex.Batch{LeafReset: !empty}
	size := 0
	// The batch's keys and values, copied off the walk's or iterator's
	// buffers: one chunk holds a whole batch (its last entry ends the batch
	// past leafBuildBytes) and is reused by the next.
	arena := kvArena{chunk: leafBuildBytes + 4<<10}
	flush := func() error {
		db.wmu.Lock()
		err := db.backend.Write(b)
		db.wmu.Unlock()
		b.LeafReset, b.Leaves, size = false, b.Leaves[:0], 0
		arena.reset() // Write keeps none of the batch
		return err
	}
	err = each(func(key, val []byte) error {
		k, v := arena.add(key, val)
		b.Leaves = append(b.Leaves, vertex.LeafEntry{Key: k, Val: v})
		entries++
		if size += len(k) + len(v); size < leafBuildBytes {
			return nil
		}
		return flush()
	})
	if err == nil && (len(b.Leaves) > 0 || b.LeafReset) {
		err = flush()
	}
	if err == nil {
		b.Leaves = append(b.Leaves, vertex.LeafEntry{Key: leafMarkerKey, Val: leafMarkerValue})
		err = flush()
	}
	db.mu.RUnlock()
	if err != nil {
		return entries, fmt.Errorf("trie: building the leaf index: %w", err)
	}
	db.mu.Lock()
	db.leafIdx = true
	db.mu.Unlock()
	return entries, nil
}

// leafIndexEmpty reports whether the backend's leaf index holds no entry,
// not even the marker. The caller holds db.mu.
func (db *DB) leafIndexEmpty() (bool, error) {
	errFound := errors.New("found")
	err := db.backend.EachLeaf(nil, func(_, _ []byte) error { return errFound })
	if errors.Is(err, errFound) {
		return false, nil
	}
	return err == nil, err
}

// kvArena holds copies of keys and values in large chunks: one allocation
// per chunk rather than two per entry. A full chunk is left to the entries
// taken from it and a new one started.
type kvArena struct {
	buf   []byte
	chunk int // bytes per chunk
}

// add copies key and val into the arena and returns the copies.
func (a *kvArena) add(key, val []byte) (k, v []byte) {
	n := len(key) + len(val)
	if cap(a.buf)-len(a.buf) < n {
		a.buf = make([]byte, 0, max(a.chunk, n))
	}
	start := len(a.buf)
	a.buf = append(append(a.buf, key...), val...)
	kv := a.buf[start:]
	return kv[:len(key):len(key)], kv[len(key):n:n]
}

// reset reuses the current chunk from its start: the caller no longer holds
// any entry taken from the arena.
func (a *kvArena) reset() { a.buf = a.buf[:0] }
