package trie

import (
	"bytes"
	"math/bits"

	"github.com/hexstate/hexstate/vertex"
)

// remove deletes the key at nibble path below vertex id and reports whether there
// was one; must says that id is referenced (a child or a storage root) and so has
// to exist. A branch left with a single child and no value collapses: the child
// moves up into the branch's ID, its path prefixed by the branch's path and slot
// nibble (a branch child keeps its own child slots). A branch left with a value and
// no children becomes a leaf. Both happen only at the immediate parent, because
// extensions are fused into branches.
//
// Every read happens before the first write, at each level: the sibling a
// collapse will need is read before descending. A read error therefore leaves the
// frame as it was, never with a half-collapsed branch.
func (fr *Frame) remove(id vertex.ID, path []byte, must bool) (bool, error) {
	v, err := fr.lookup(id, must)
	if err != nil || v == nil || !bytes.HasPrefix(path, v.Path) {
		return false, err
	}
	rest := path[len(v.Path):]
	if v.Kind == vertex.Leaf {
		if len(rest) != 0 {
			return false, nil
		}
		fr.vtx.Set(id, nil)
		return true, nil
	}
	n := -1 // the slot the key goes down, or -1 for the branch's own value
	if len(rest) > 0 {
		if n = int(rest[0]); v.Used&(1<<n) == 0 {
			return false, nil
		}
	} else if !v.HasValue() {
		return false, nil
	}
	// The child a collapse would move up: the one slot left besides n, when the
	// branch has (or, removing its value, will have) no value.
	var only *node
	onlyN := -1
	left := v.Used
	if n >= 0 {
		left &^= 1 << n
	}
	if bits.OnesCount16(left) == 1 && (n < 0 || !v.HasValue()) {
		onlyN = bits.TrailingZeros16(left)
		if only, err = fr.need(v.Child(onlyN)); err != nil {
			return false, err
		}
	}
	var b *node
	if n < 0 {
		b = fr.own(id, v)
		b.Payload, b.Value, b.Acc = vertex.NoPayload, nil, nil
	} else {
		cid := v.Child(n)
		if ok, err := fr.remove(cid, rest[1:], true); !ok || err != nil {
			return false, err
		}
		b = fr.own(id, v)
		b.stale |= 1 << n
		if c, ok := fr.vtx.Lookup(cid); ok && c == nil {
			b.Used &^= 1 << n
			b.stale &^= 1 << n
			if b.Kids != nil {
				b.Kids[n] = vertex.NoID
			}
		}
	}
	fr.collapse(id, b, onlyN, only)
	return true, nil
}

// collapse restores the branch invariant (two or more children, or one child and
// a value) for branch b, which fr owns at id. only is b's child in slot onlyN,
// read beforehand: the child that moves up if b is left with it alone.
func (fr *Frame) collapse(id vertex.ID, b *node, onlyN int, only *node) {
	switch kids := bits.OnesCount16(b.Used); {
	case kids == 0 && b.HasValue():
		leaf := fr.newVertex()
		leaf.Kind, leaf.Path = vertex.Leaf, b.Path
		setPayload(leaf, b)
		fr.vtx.Set(id, leaf)
	case kids == 0:
		fr.vtx.Set(id, nil)
	case kids == 1 && !b.HasValue():
		cid := b.Child(onlyN)
		m := fr.clone(only)
		m.Path = fr.nibbles(b.Path, []byte{byte(onlyN)}, only.Path)
		fr.vtx.Set(id, m)
		fr.vtx.Set(cid, nil)
	}
}

// subtrie returns the IDs of every vertex of the trie rooted at id (the storage
// trie of an account being deleted), reading all of it and writing nothing.
func (fr *Frame) subtrie(id vertex.ID) ([]vertex.ID, error) {
	var ids []vertex.ID
	var walk func(id vertex.ID, depth int) error
	walk = func(id vertex.ID, depth int) error {
		if depth > maxDepth {
			return vertexError(id, errTooDeep)
		}
		v, err := fr.need(id)
		if err != nil {
			return err
		}
		ids = append(ids, id)
		for n := 0; v.Kind == vertex.Branch && n < 16; n++ {
			if c := v.Child(n); c != vertex.NoID {
				if err := walk(c, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return ids, walk(id, 0)
}
