package trie

import (
	"github.com/hexstate/hexstate/vertex"
)

// merge stores the payload of leaf at nibble path below vertex id, overwriting an
// existing value. leaf is a fresh vertex owned by the caller; merge sets its Path.
//
// Branches are fused with the extension above them (a branch's Path), so a split
// never creates an extension vertex: when path leaves a leaf's or a branch's path
// after `common` nibbles, a new branch with path[:common] takes over the old
// vertex's ID (its parent's reference stays valid) and the old vertex moves into
// one of the new branch's slots, keeping its own children.
func (tx *Tx) merge(id vertex.ID, path []byte, leaf *vertex.Vertex) error {
	v, err := tx.get(id)
	if err != nil {
		return err
	}
	if v == nil {
		leaf.Path = tx.nibbles(path)
		tx.vtx.set(id, leaf)
		return nil
	}
	common := commonPrefix(v.Path, path)
	if common == len(v.Path) {
		switch {
		case v.Kind == vertex.Leaf && common == len(path): // overwrite
			leaf.Path = v.Path
			if leaf.Acc != nil && v.Acc != nil {
				leaf.Acc.Storage = v.Acc.Storage // an updated account keeps its storage
			}
			tx.vtx.set(id, leaf)
			return nil
		case v.Kind == vertex.Branch:
			b := tx.own(id, v)
			rest := path[common:]
			if len(rest) == 0 { // the key ends at this branch (generic tries)
				setPayload(b, leaf)
				return nil
			}
			n := rest[0]
			if b.Used&(1<<n) != 0 {
				return tx.merge(b.Child(int(n)), rest[1:], leaf)
			}
			leaf.Path = tx.nibbles(rest[1:])
			tx.vtx.set(tx.addChild(b, n), leaf)
			return nil
		}
		// A leaf whose key is a strict prefix of the new key: split below.
	}
	b := tx.newBranch(tx.nibbles(path[:common]))
	if common == len(v.Path) {
		setPayload(b, v) // the old leaf's key ends at the new branch
	} else {
		o := v.Clone()
		o.Path = v.Path[common+1:]
		o.Key = vertexKeyVoid
		tx.vtx.set(tx.addChild(b, v.Path[common]), o)
	}
	if common == len(path) {
		setPayload(b, leaf)
	} else {
		leaf.Path = tx.nibbles(path[common+1:])
		tx.vtx.set(tx.addChild(b, path[common]), leaf)
	}
	tx.vtx.set(id, b)
	return nil
}

// setPayload copies the payload of src into dst.
func setPayload(dst, src *vertex.Vertex) {
	dst.Payload, dst.Value, dst.Acc = src.Payload, src.Value, src.Acc
}

func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
