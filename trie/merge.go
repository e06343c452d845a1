package trie

import (
	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/vertex"
)

// payload is what a write stores at a key.
type payload struct {
	kind  vertex.PayloadKind
	value []byte
	acc   *vertex.Account
}

// setOn copies p into vertex v.
func (p *payload) setOn(v *node) { v.Payload, v.Value, v.Acc = p.kind, p.value, p.acc }

// merge stores p at nibble path below vertex id, overwriting an existing value;
// must says id is referenced and so has to exist (see Frame.need).
//
// Branches are fused with the extension above them (a branch's Path), so a split
// never creates an extension vertex: when path leaves a leaf's or a branch's path
// after `common` nibbles, a new branch with path[:common] takes over the old
// vertex's ID (its parent's reference stays valid) and the old vertex moves into
// one of the new branch's slots, keeping its own children.
func (fr *Frame) merge(id vertex.ID, path []byte, p *payload, must bool) error {
	v, err := fr.lookup(id, must)
	if err != nil {
		return err
	}
	if v == nil {
		fr.vtx.Set(id, fr.newLeaf(fr.nibbles(path), p))
		return nil
	}
	common := hashkey.CommonPrefix(v.Path, path)
	if common == len(v.Path) {
		switch {
		case v.Kind == vertex.Leaf && common == len(path): // overwrite
			if p.acc != nil && v.Acc != nil {
				// An updated account keeps its storage, and so its root.
				p.acc.Storage, p.acc.StorageKey = v.Acc.Storage, v.Acc.StorageKey
			}
			p.setOn(fr.own(id, v))
			return nil
		case v.Kind == vertex.Branch:
			b := fr.own(id, v)
			rest := path[common:]
			if len(rest) == 0 { // the key ends at this branch (generic tries)
				p.setOn(b)
				return nil
			}
			n := rest[0]
			b.stale |= 1 << n
			if b.Used&(1<<n) != 0 {
				return fr.merge(b.Child(int(n)), rest[1:], p, true)
			}
			fr.vtx.Set(fr.addChild(b, n), fr.newLeaf(fr.nibbles(rest[1:]), p))
			return nil
		}
		// A leaf whose key is a strict prefix of the new key: split below.
	}
	b := fr.newBranch(fr.nibbles(path[:common]))
	if common == len(v.Path) {
		setPayload(b, v) // the old leaf's key ends at the new branch
	} else {
		o := fr.clone(v)
		o.Path = v.Path[common+1:]
		fr.vtx.Set(fr.addChild(b, v.Path[common]), o)
	}
	if common == len(path) {
		p.setOn(b)
	} else {
		fr.vtx.Set(fr.addChild(b, path[common]), fr.newLeaf(fr.nibbles(path[common+1:]), p))
	}
	fr.vtx.Set(id, b)
	return nil
}

// setPayload copies the payload of src into dst.
func setPayload(dst, src *node) {
	dst.Payload, dst.Value, dst.Acc = src.Payload, src.Value, src.Acc
}
