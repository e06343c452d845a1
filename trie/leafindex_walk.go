package trie

import (
	"bytes"
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
// every account and slot of fr's state (an account's slots follow it). The
// caller holds db.mu (fr is read without entering it). key and val are only
// valid during the call.
func (fr *Frame) eachLeafEntry(ctx context.Context, fn func(key, val []byte) error) error {
	w := leafWalk{fr: fr, ctx: ctx, fn: fn}
	return w.walk(vertex.RootID, nil, nil, false)
}

type leafWalk struct {
	fr  *Frame
	ctx context.Context
	fn  func(key, val []byte) error
	val []byte
	n   int
}

// walk visits the sub-trie at id (at nibble path prefix, in owner's storage
// trie or, owner nil, the account trie); must says id is referenced.
func (w *leafWalk) walk(id vertex.ID, prefix []byte, owner *hashkey.Hash, must bool) error {
	if w.n++; w.n&4095 == 0 {
		if err := w.ctx.Err(); err != nil {
			return err
		}
	}
	v, err := w.fr.lookup(id, must)
	if err != nil || v == nil {
		return err
	}
	if v.Kind == vertex.Branch {
		if err := w.fr.db.prefetchChildren(w.fr, v); err != nil {
			return err
		}
		for n := range 16 {
			if c := v.Child(n); c != vertex.NoID {
				if err := w.walk(c, append(append(prefix[:len(prefix):len(prefix)], v.Path...), byte(n)), owner, true); err != nil {
					return err
				}
			}
		}
		return nil
	}
	key, ok := leafKey(prefix, v.Path, owner)
	if !ok || (v.Payload != vertex.AccountPayload && v.Payload != vertex.SlotPayload) {
		return nil // a generic trie's leaf: no entry
	}
	w.val = leafValue(w.val[:0], &v.Vertex)
	if err := w.fn(key, w.val); err != nil {
		return err
	}
	if owner == nil && v.Acc.Storage != vertex.NoID {
		h := hashkey.Hash(key)
		return w.walk(v.Acc.Storage, nil, &h, true)
	}
	return nil
}

// leafBuildBatch is how many entries BuildLeafIndex writes per batch.
const leafBuildBatch = 1 << 16

// BuildLeafIndex builds the leaf index of the persisted state from the trie,
// for a database written without one (by hexstate before the index existed,
// or by CopyFrom): until it is built, cold reads walk the trie. It writes in
// batches, the first of which empties the index and the last of which marks
// it complete, so a build cut short (by ctx or a crash) leaves an index that
// is not used, and the next build starts over. It holds the database's read
// lock throughout (Persist and Begin wait) and first waits for a pending
// persist. Building the index of a database that has one rebuilds it.
func (db *DB) BuildLeafIndex(ctx context.Context) (entries uint64, err error) {
	db.persistMu.Lock()
	defer db.persistMu.Unlock()
	if err := db.settle(); err != nil {
		return 0, err
	}
	db.mu.Lock()
	db.leafIdx = false // readers walk the trie until the build is complete
	db.mu.Unlock()
	db.mu.RLock()
	if db.closed {
		db.mu.RUnlock()
		return 0, ErrClosed
	}
	b := &vertex.Batch{LeafReset: true}
	flush := func() error {
		db.wmu.Lock()
		err := db.backend.Write(b)
		db.wmu.Unlock()
		b = &vertex.Batch{}
		return err
	}
	err = db.base.eachLeafEntry(ctx, func(key, val []byte) error {
		b.Leaves = append(b.Leaves, vertex.LeafEntry{Key: bytes.Clone(key), Val: bytes.Clone(val)})
		entries++
		if len(b.Leaves) < leafBuildBatch {
			return nil
		}
		return flush()
	})
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
