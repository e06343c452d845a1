package trie

import "github.com/hexstate/hexstate/vertex"

// frameStore holds the vertices one frame changed. IDs the frame allocated itself
// (from `first` up) cannot exist below it, so they live in a slice indexed by
// ID-first, where a lookup is an index and an absent entry is a definite "no
// vertex" that needs no look below. Vertices that existed before the frame (IDs
// below first) live in a map, where nil marks a deletion.
//
// Most of a block's new vertices are fresh (new leaves, new branches and their 16
// slots), so the map stays small; a standalone Trie uses the slice alone.
type frameStore struct {
	old   map[vertex.ID]*vertex.Vertex
	first vertex.ID
	fresh []*vertex.Vertex
}

func newFrameStore(first vertex.ID) frameStore {
	return frameStore{old: make(map[vertex.ID]*vertex.Vertex), first: first}
}

// lookup returns the frame's version of id; ok is false when the frame has none
// and the caller must look below. A nil vertex with ok true means "no vertex".
func (s *frameStore) lookup(id vertex.ID) (v *vertex.Vertex, ok bool) {
	if id >= s.first {
		if i := uint64(id - s.first); i < uint64(len(s.fresh)) {
			return s.fresh[i], true
		}
		return nil, true
	}
	v, ok = s.old[id]
	return v, ok
}

// set records v (nil: deleted) as the frame's version of id.
func (s *frameStore) set(id vertex.ID, v *vertex.Vertex) {
	if id < s.first {
		s.old[id] = v
		return
	}
	i := int(id - s.first)
	if i >= len(s.fresh) {
		if i >= cap(s.fresh) {
			grown := make([]*vertex.Vertex, i+1, max(2*cap(s.fresh), i+1, 256))
			copy(grown, s.fresh)
			s.fresh = grown
		} else {
			s.fresh = s.fresh[:i+1]
		}
	}
	s.fresh[i] = v
}

// reserve makes room for n more fresh IDs without regrowing the slice.
func (s *frameStore) reserve(n int) {
	if cap(s.fresh)-len(s.fresh) < n {
		grown := make([]*vertex.Vertex, len(s.fresh), len(s.fresh)+n)
		copy(grown, s.fresh)
		s.fresh = grown
	}
}

// each calls fn for every change: every fresh vertex, and every older vertex with
// its new version (nil for a deletion).
func (s *frameStore) each(fn func(id vertex.ID, v *vertex.Vertex)) {
	for id, v := range s.old {
		fn(id, v)
	}
	for i, v := range s.fresh {
		if v != nil {
			fn(s.first+vertex.ID(i), v)
		}
	}
}

// len is the number of vertices the frame holds (deletions of older vertices
// included).
func (s *frameStore) len() int {
	n := len(s.old)
	for _, v := range s.fresh {
		if v != nil {
			n++
		}
	}
	return n
}
