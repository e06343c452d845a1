package trie

import (
	"bytes"
	"context"
	"fmt"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/vertex"
)

// leafSpotEvery is how often CopyLeafIndex compares a copied entry with the
// target's own trie: one entry in leafSpotEvery, the first included.
const leafSpotEvery = 1024

// CopyLeafIndex gives db the leaf index of src, a database holding the same
// persisted state (block and root; CopyFrom's source after a copy). The index
// is keyed by account and slot hashes and its values are leaves without path
// or vertex IDs, so it is the same in every format and record variant: it is
// copied entry by entry in key order rather than derived from a walk of the
// trie, which is what BuildLeafIndex does (and what a migration did after its
// copy, a second walk of the whole state).
//
// The copy trusts the source's index as CopyFrom trusts its records, with
// checks that cost little: each value must decode as a leaf-index value of
// its key's kind, and one entry in 1,024 (the first included) must equal the
// leaf db's trie holds at its key; else the copy stops with an error
// (ErrLeafIndexMismatch for the latter) and db keeps no index. An entry the
// source lacks is not noticed: DB.Check (trie-check) compares the whole
// index with the trie. Writing follows BuildLeafIndex: in
// batches, the index marked complete by the last, so an interrupted copy
// leaves an index that is not used. src's index must be complete
// (ErrNoLeafIndex).
//
// src is read under its lock throughout: its persists and writes wait until
// the copy ends. Locks are taken source first, so two copies in opposite
// directions at once deadlock; src and db must not share a backend.
func (db *DB) CopyLeafIndex(ctx context.Context, src *DB) (entries uint64, err error) {
	if src == db {
		return 0, fmt.Errorf("trie: copying a leaf index: source and target are the same database")
	}
	src.persistMu.Lock()
	defer src.persistMu.Unlock()
	if err := src.settle(); err != nil {
		return 0, fmt.Errorf("trie: copying a leaf index: the source's pending persist: %w", err)
	}
	src.mu.RLock()
	defer src.mu.RUnlock()
	switch {
	case src.closed:
		return 0, ErrClosed
	case !src.leafIdx:
		return 0, ErrNoLeafIndex
	}
	sameState := func() error { // under db.mu, with no persist of db pending or possible
		if db.block != src.block || db.root != src.root {
			return fmt.Errorf("trie: copying a leaf index: %w: source at block %d (root %v), target at block %d (root %v)",
				ErrLeafIndexMismatch, src.block, src.root, db.block, db.root)
		}
		return nil
	}
	return db.writeLeafIndex(sameState, func(fn func(key, val []byte) error) error {
		var n uint64
		var scratch leafScratch
		return src.backend.EachLeaf(nil, func(key, val []byte) error {
			if bytes.Equal(key, leafMarkerKey) {
				return nil
			}
			if n%leafSpotEvery == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			if err := db.checkCopiedLeaf(&scratch, key, val, n%leafSpotEvery == 0); err != nil {
				return err
			}
			n++
			return fn(key, val)
		})
	})
}

// leafScratch is what checkCopiedLeaf decodes an entry into, reused from one
// entry to the next.
type leafScratch struct {
	v   vertex.Vertex
	acc vertex.Account
	buf [decodeRoom]byte // v's path and value
}

// checkCopiedLeaf checks a leaf-index entry read from another database:
// its value decodes (into s) as its key's kind and, when spot, equals the
// leaf db's trie holds at key. The caller holds db.mu for reading.
func (db *DB) checkCopiedLeaf(s *leafScratch, key, val []byte, spot bool) error {
	if err := decodeLeafEntry(s, key, val); err != nil || !spot {
		return err
	}
	v, err := db.storedLeaf(key)
	if err != nil {
		return err
	}
	if v == nil || !bytes.Equal(leafValue(nil, &v.Vertex), val) {
		return fmt.Errorf("%w: entry %x is not the target trie's leaf", ErrLeafIndexMismatch, key)
	}
	return nil
}

// decodeLeafEntry decodes a leaf-index entry read from a store into s: an
// account's (a 32-byte key) or a slot's (64 bytes). Anything else is an
// error wrapping vertex.ErrCorrupt.
func decodeLeafEntry(s *leafScratch, key, val []byte) error {
	want := vertex.SlotPayload
	switch len(key) {
	case 32:
		want = vertex.AccountPayload
	case 64:
	default:
		return fmt.Errorf("trie: leaf index entry %x: %w", key, &vertex.CorruptError{Reason: "key neither 32 nor 64 bytes"})
	}
	return decodeLeafValueInto(&s.v, &s.acc, s.buf[:0], key, val, want)
}

// storedLeaf returns the leaf the backend's trie holds at a leaf-index key
// (an account hash, or an account hash and a slot hash), or nil when there
// is none. It reads the backend only: the caller holds db.mu and no frame
// or pending write is consulted (CopyLeafIndex runs with none pending).
func (db *DB) storedLeaf(key []byte) (*node, error) {
	w := leafWalk{db: db}
	id := vertex.RootID
	for part := 0; 32*part < len(key); part++ {
		var nb [64]byte
		path := hashkey.AppendNibbles(nb[:0], key[32*part:32*part+32])
		v, err := w.read(id, part > 0)
		for err == nil && v != nil && bytes.HasPrefix(path, v.Path) && v.Kind == vertex.Branch {
			path = path[len(v.Path):]
			if len(path) == 0 || v.Child(int(path[0])) == vertex.NoID {
				return nil, nil
			}
			id, path = v.Child(int(path[0])), path[1:]
			v, err = w.read(id, true)
		}
		if err != nil || v == nil || v.Kind != vertex.Leaf || !bytes.Equal(path, v.Path) {
			return nil, err
		}
		if 32*(part+1) == len(key) {
			return v, nil
		}
		if v.Acc == nil || v.Acc.Storage == vertex.NoID {
			return nil, nil
		}
		id = v.Acc.Storage
	}
	return nil, nil
}
