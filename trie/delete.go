package trie

import (
	"math/bits"

	"github.com/hexstate/hexstate/vertex"
)

// remove deletes the key at nibble path below vertex id and reports whether there
// was one. A branch left with a single child and no value collapses: the child
// moves up into the branch's ID, its path prefixed by the branch's path and slot
// nibble (a branch child keeps its own child slots). A branch left with a value and
// no children becomes a leaf. Both happen only at the immediate parent, because
// extensions are fused into branches.
func (tx *Tx) remove(id vertex.ID, path []byte) (bool, error) {
	v, err := tx.get(id)
	if err != nil || v == nil {
		return false, err
	}
	if len(path) < len(v.Path) || commonPrefix(v.Path, path) != len(v.Path) {
		return false, nil
	}
	rest := path[len(v.Path):]
	if v.Kind == vertex.Leaf {
		if len(rest) != 0 {
			return false, nil
		}
		tx.vtx.set(id, nil)
		return true, nil
	}
	var b *vertex.Vertex
	if len(rest) == 0 {
		if !v.HasValue() {
			return false, nil
		}
		b = tx.own(id, v)
		b.Payload, b.Value, b.Acc = vertex.NoPayload, nil, nil
	} else {
		n := int(rest[0])
		if v.Used&(1<<n) == 0 {
			return false, nil
		}
		cid := v.Child(n)
		if ok, err := tx.remove(cid, rest[1:]); !ok || err != nil {
			return false, err
		}
		b = tx.own(id, v)
		b.Stale |= 1 << n
		if c, ok := tx.vtx.lookup(cid); ok && c == nil {
			b.Used &^= 1 << n
			if b.Kids != nil {
				b.Kids[n] = vertex.NoID
			}
		}
	}
	return true, tx.collapse(id, b)
}

// collapse restores the branch invariant (two or more children, or one child and
// a value) for branch b, which tx owns at id.
func (tx *Tx) collapse(id vertex.ID, b *vertex.Vertex) error {
	switch kids := bits.OnesCount16(b.Used); {
	case kids == 0 && b.HasValue():
		leaf := tx.newVertex()
		leaf.Kind, leaf.Path = vertex.Leaf, b.Path
		setPayload(leaf, b)
		tx.vtx.set(id, leaf)
	case kids == 0:
		tx.vtx.set(id, nil)
	case kids == 1 && !b.HasValue():
		n := bits.TrailingZeros16(b.Used)
		cid := b.Child(n)
		c, err := tx.get(cid)
		if err != nil {
			return err
		}
		if c == nil {
			return vertexError(cid, ErrMissingVertex)
		}
		m := tx.clone(c)
		m.Path = tx.nibbles(b.Path, []byte{byte(n)}, c.Path)
		tx.vtx.set(id, m)
		tx.vtx.set(cid, nil)
	}
	return nil
}

// removeSubtrie deletes every vertex of the trie rooted at id (a storage trie of a
// deleted account).
func (tx *Tx) removeSubtrie(id vertex.ID) error {
	v, err := tx.get(id)
	if err != nil || v == nil {
		return err
	}
	if v.Kind == vertex.Branch {
		for n := 0; n < 16; n++ {
			if c := v.Child(n); c != vertex.NoID {
				if err := tx.removeSubtrie(c); err != nil {
					return err
				}
			}
		}
	}
	tx.vtx.set(id, nil)
	return nil
}
