package trie

import "github.com/hexstate/hexstate/vertex"

// frameSink places the vertices a build.Builder emits into a frame (an
// in-memory bulk load). The builder reuses what it emits, so the sink copies
// each vertex — its path, value, children's keys, account and v1 child array —
// into slabs of its own. Sinks of parallel builders share nothing but the
// frame's fresh-ID slice, sized beforehand (framestore.Store.Extend), of which each
// writes only the slots of its own IDs.
type frameSink struct {
	fr    *Frame
	verts []node
	accs  []vertex.Account
	kids  [][16]vertex.ID
	arena []byte
}

// put places a copy of v at id: a fresh ID in its sized slot, any other
// (the root) through the frame's map.
func (s *frameSink) put(id vertex.ID, v *vertex.Vertex) error {
	c := take(&s.verts, 1024)
	// Field by field into the zero slab entry, each pointer written once; an
	// emitted vertex has no Stale bits.
	c.Key, c.Kind, c.Payload, c.Used, c.Base = v.Key, v.Kind, v.Payload, v.Used, v.Base
	c.Path, c.Value = s.bytes(v.Path), s.bytes(v.Value)
	if v.ChildKeys != nil {
		c.ChildKeys = vertex.ChildKeys(s.bytes(v.ChildKeys))
	}
	if v.Acc != nil {
		c.Acc = take(&s.accs, 1024)
		*c.Acc = *v.Acc
	}
	if v.Kids != nil {
		c.Kids = take(&s.kids, 256)
		*c.Kids = *v.Kids
	}
	if !s.fr.vtx.SetSized(id, c) {
		s.fr.vtx.Set(id, c)
	}
	return nil
}

// bytes returns a copy of b in the sink's arena (nil for an empty b).
func (s *frameSink) bytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	if cap(s.arena)-len(s.arena) < len(b) {
		s.arena = make([]byte, 0, max(len(b), 256<<10))
	}
	start := len(s.arena)
	s.arena = append(s.arena, b...)
	return s.arena[start:len(s.arena):len(s.arena)]
}
