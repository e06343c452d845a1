package trie

import (
	"bytes"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/vertex"
)

// This file is the generic byte-keyed trie at the root of a frame: keys are any
// bytes, values any non-empty bytes (an empty value deletes).

// Put stores value under key; an empty value deletes key.
func (tx *Tx) Put(key, value []byte) error {
	if len(value) == 0 {
		return tx.Delete(key)
	}
	tx.db.mu.RLock()
	defer tx.db.mu.RUnlock()
	if err := tx.check(true); err != nil {
		return err
	}
	var nb [64]byte
	p := payload{kind: vertex.RawPayload, value: tx.copyValue(value)}
	return tx.merge(vertex.RootID, hashkey.AppendNibbles(nb[:0], key), &p, false)
}

// Get returns the value stored under key, or nil when there is none.
func (tx *Tx) Get(key []byte) ([]byte, error) {
	tx.db.mu.RLock()
	defer tx.db.mu.RUnlock()
	if err := tx.check(false); err != nil {
		return nil, err
	}
	var nb [64]byte
	v, err := tx.find(vertex.RootID, hashkey.AppendNibbles(nb[:0], key), false)
	if v == nil || err != nil {
		return nil, err
	}
	return append([]byte(nil), v.Value...), nil
}

// Delete removes key; deleting an absent key is not an error.
func (tx *Tx) Delete(key []byte) error {
	tx.db.mu.RLock()
	defer tx.db.mu.RUnlock()
	if err := tx.check(true); err != nil {
		return err
	}
	var nb [64]byte
	_, err := tx.remove(vertex.RootID, hashkey.AppendNibbles(nb[:0], key), false)
	return err
}

// Hash returns the root hash of the frame's trie, recomputing only the keys its
// writes voided.
func (tx *Tx) Hash() (hashkey.Hash, error) {
	unlock := tx.lockForHash()
	defer unlock()
	if err := tx.check(false); err != nil {
		return hashkey.Hash{}, err
	}
	return tx.hash()
}

// hash computes the root hash; the caller holds db.mu.
func (tx *Tx) hash() (hashkey.Hash, error) {
	k, err := tx.rootKey(vertex.RootID)
	if err != nil {
		return hashkey.Hash{}, err
	}
	return k.Hash(), nil
}

// find returns the vertex holding the payload at nibble path below id, if any;
// must says id has to exist (see Tx.need).
func (tx *Tx) find(id vertex.ID, path []byte, must bool) (*vertex.Vertex, error) {
	for {
		v, err := tx.lookup(id, must)
		if err != nil || v == nil {
			return nil, err
		}
		if !bytes.HasPrefix(path, v.Path) {
			return nil, nil
		}
		path = path[len(v.Path):]
		if v.Kind == vertex.Leaf {
			if len(path) != 0 {
				return nil, nil
			}
			return v, nil
		}
		if len(path) == 0 {
			if !v.HasValue() {
				return nil, nil
			}
			return v, nil
		}
		if id = v.Child(int(path[0])); id == vertex.NoID {
			return nil, nil
		}
		path, must = path[1:], true
	}
}

// copyValue copies a caller's value into the frame's arena.
func (tx *Tx) copyValue(v []byte) []byte { return tx.nibbles(v) }

// lockForHash locks the database for computing keys in tx. Keys are memoized in
// the frame's map; a sealed frame may be read by its children concurrently, so
// hashing it takes the lock exclusively. A frame without children needs only the
// shared lock.
//
// Reading tx.sealed before taking the lock is safe: only Begin on tx sets it,
// and a frame is used by one goroutine at a time.
func (tx *Tx) lockForHash() (unlock func()) {
	if tx.sealed {
		tx.db.mu.Lock()
		return tx.db.mu.Unlock
	}
	tx.db.mu.RLock()
	return tx.db.mu.RUnlock
}
