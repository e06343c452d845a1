package trie

import (
	"bytes"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/vertex"
)

// This file is the generic byte-keyed trie at the root of a frame, used by Trie: keys are any
// bytes, values any non-empty bytes (an empty value deletes).

// putKey stores value under key; an empty value deletes key.
func (fr *Frame) putKey(key, value []byte) error {
	if len(value) == 0 {
		return fr.deleteKey(key)
	}
	if err := fr.enter(useWrite, "put"); err != nil {
		return err
	}
	defer fr.leave(useWrite)
	var nb [64]byte
	p := payload{kind: vertex.RawPayload, value: fr.copyValue(value)}
	return fr.merge(vertex.RootID, hashkey.AppendNibbles(nb[:0], key), &p, false)
}

// getKey returns the value stored under key, or nil when there is none.
func (fr *Frame) getKey(key []byte) ([]byte, error) {
	if err := fr.enter(useRead, "get"); err != nil {
		return nil, err
	}
	defer fr.leave(useRead)
	var nb [64]byte
	v, err := fr.find(vertex.RootID, hashkey.AppendNibbles(nb[:0], key), false)
	if v == nil || err != nil {
		return nil, err
	}
	return append([]byte(nil), v.Value...), nil
}

// deleteKey removes key; deleting an absent key is not an error.
func (fr *Frame) deleteKey(key []byte) error {
	if err := fr.enter(useWrite, "delete"); err != nil {
		return err
	}
	defer fr.leave(useWrite)
	var nb [64]byte
	removed, err := fr.remove(vertex.RootID, hashkey.AppendNibbles(nb[:0], key), false)
	if removed {
		fr.removed.all = true
	}
	return err
}

// lockedHash returns the root hash of the frame's trie, recomputing only the keys its
// writes voided.
func (fr *Frame) lockedHash() (hashkey.Hash, error) {
	if err := fr.enter(useHash, "hash"); err != nil {
		return hashkey.Hash{}, err
	}
	defer fr.leave(useHash)
	return fr.hash()
}

// hash computes the root hash; the caller holds db.mu.
func (fr *Frame) hash() (hashkey.Hash, error) {
	k, err := fr.rootKey(vertex.RootID)
	if err != nil {
		return hashkey.Hash{}, err
	}
	return k.Hash(), nil
}

// find returns the vertex holding the payload at nibble path below id, if any;
// must says id has to exist (see Frame.need).
func (fr *Frame) find(id vertex.ID, path []byte, must bool) (*node, error) {
	v, _, err := fr.walk(id, path, must, nil)
	return v, err
}

// walk is find for a cold read (see read_cold.go): with c not nil it counts
// the backend reads in c, and when the database has a leaf index it stops at
// the first vertex that only the backend holds and reports cold instead.
func (fr *Frame) walk(id vertex.ID, path []byte, must bool, c *coldRead) (_ *node, cold bool, err error) {
	for {
		v, cold, err := fr.lookupCold(id, must, c)
		if err != nil || v == nil {
			return nil, cold, err
		}
		if !bytes.HasPrefix(path, v.Path) {
			return nil, false, nil
		}
		path = path[len(v.Path):]
		if v.Kind == vertex.Leaf {
			if len(path) != 0 {
				return nil, false, nil
			}
			return v, false, nil
		}
		if len(path) == 0 {
			if !v.HasValue() {
				return nil, false, nil
			}
			return v, false, nil
		}
		if id = v.Child(int(path[0])); id == vertex.NoID {
			return nil, false, nil
		}
		path, must = path[1:], true
	}
}

// copyValue copies a caller's value into the frame's arena.
func (fr *Frame) copyValue(v []byte) []byte { return fr.nibbles(v) }
