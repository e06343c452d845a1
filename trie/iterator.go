package trie

import (
	"bytes"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/vertex"
)

// Iterator walks the keys of a trie in ascending order from a start key. Each Next
// reads the frame anew under the database's read lock; writes to the frame during
// an iteration are not allowed (a sealed frame cannot change).
type Iterator struct {
	fr    *Frame
	stack []iterFrame
	path  []byte // nibbles of the current position
	key   []byte
	value *node
	err   error
}

// iterFrame is one vertex on the iterator's path.
type iterFrame struct {
	v       *node
	plen    int    // nibbles of the key above v.Path
	bound   []byte // nibbles of start still to honour below v.Path; nil: none
	pos     int    // -1: own value not yet visited; 0..15 next child; 16 done
	bounded bool
}

// iterator returns an iterator over the generic trie's keys >= start.
func (fr *Frame) iterator(start []byte) *Iterator {
	return fr.iterate(vertex.RootID, hashkey.AppendNibbles(nil, start))
}

func (fr *Frame) iterate(root vertex.ID, start []byte) *Iterator {
	it := &Iterator{fr: fr}
	if it.err = fr.enter(useRead, "iterate"); it.err == nil {
		it.push(root, 0, start, len(start) > 0, root != vertex.RootID)
		fr.leave(useRead)
	}
	return it
}

// push enters vertex id below a key prefix of plen nibbles (already in it.path),
// skipping it when all its keys are below the bound; must says id is referenced
// and so has to exist.
func (it *Iterator) push(id vertex.ID, plen int, bound []byte, bounded, must bool) {
	if len(it.stack) >= maxDepth {
		it.err = vertexError(id, errTooDeep)
		return
	}
	v, err := it.fr.lookup(id, must)
	if err != nil || v == nil {
		it.err = err
		return
	}
	if bounded {
		l := min(len(v.Path), len(bound))
		switch c := bytes.Compare(v.Path[:l], bound[:l]); {
		case c < 0:
			return // every key below is smaller than start
		case c > 0 || len(bound) <= len(v.Path):
			bounded, bound = false, nil // every key below is >= start
		default:
			bound = bound[len(v.Path):]
		}
	}
	it.path = append(it.path[:plen], v.Path...)
	it.stack = append(it.stack, iterFrame{v: v, plen: plen, bound: bound, pos: -1, bounded: bounded})
}

// Next moves to the next key and reports whether there is one.
func (it *Iterator) Next() bool {
	if it.err != nil {
		return false
	}
	if it.err = it.fr.enter(useRead, "iterate"); it.err != nil {
		return false
	}
	defer it.fr.leave(useRead)
	for len(it.stack) > 0 && it.err == nil {
		f := &it.stack[len(it.stack)-1]
		end := f.plen + len(f.v.Path)
		if f.pos == -1 {
			f.pos = 0
			if f.v.Kind == vertex.Leaf {
				f.pos = 16
			}
			if f.v.HasValue() && !f.bounded {
				it.key = hashkey.AppendPacked(it.key[:0], it.path[:end])
				it.value = f.v
				return true
			}
			continue
		}
		if f.pos >= 16 {
			it.stack = it.stack[:len(it.stack)-1]
			continue
		}
		n := f.pos
		f.pos++
		id := f.v.Child(n)
		if id == vertex.NoID {
			continue
		}
		bound, bounded := []byte(nil), false
		if f.bounded {
			switch {
			case n < int(f.bound[0]):
				continue
			case n == int(f.bound[0]):
				bound, bounded = f.bound[1:], true
			}
		}
		it.path = append(it.path[:end], byte(n))
		it.push(id, end+1, bound, bounded, true)
	}
	return false
}

// Key returns the current key; it is valid until the next call to Next.
func (it *Iterator) Key() []byte { return it.key }

// Value returns the current value (for a generic trie, the bytes stored).
func (it *Iterator) Value() []byte {
	if it.value == nil {
		return nil
	}
	return it.value.Value
}

// Err returns the error that stopped the iteration, if any.
func (it *Iterator) Err() error { return it.err }
