package framestore

import (
	"math"

	"github.com/hexstate/hexstate/vertex"
)

// Store holds the vertices one frame changed (of type V: the trie's in-memory
// vertex), by vertex ID. IDs the frame allocated itself
// (from `first` up) cannot exist below it, so they live in a slice indexed by
// ID-first, where a lookup is an index and an absent entry is a definite "no
// vertex" that needs no look below. Vertices that existed before the frame (IDs
// below first) live in a map, where nil marks a deletion.
//
// Most of a block's new vertices are fresh (new leaves, new branches and their 16
// slots), so the map stays small; a standalone Trie keeps only its root (vertex
// 1, which predates its one frame) in the map.
//
// A read that misses in a frame asks the index of the frames below it
// (ChainIndex), or, where a frame has none, goes on to its parent: a read of a
// persisted vertex through 64 unindexed frames asks 64 maps, each a cache
// miss. filter, a small Bloom filter over the keys of old (16 bits per key,
// two probes), answers most of those misses from a few KiB that stay in the
// CPU cache.
//
// A sealed frame's store is packed (Pack): its vertices become records in one
// pointer-free buffer, decoded again on each lookup. What is Set after that
// goes to old, whatever the ID, and wins over the records.
type Store[V any] struct {
	old    map[vertex.ID]*V
	first  vertex.ID
	fresh  []*V
	filter []uint64   // Len a power of two; nil while old is empty
	packed *packed[V] // nil until Pack
}

// filterProbes returns the two bit positions of id in a filter of mask+1 bits.
// The two come from one splitmix64 mix of the ID: its low and high halves
// (filters stay below 2^32 bits).
func filterProbes(id vertex.ID, mask uint64) (uint64, uint64) {
	h := uint64(id) + 0x9E3779B97F4A7C15
	h = (h ^ h>>30) * 0xBF58476D1CE4E5B9
	h = (h ^ h>>27) * 0x94D049BB133111EB
	h ^= h >> 31
	return h & mask, h >> 32 & mask
}

func (s *Store[V]) mayHold(id vertex.ID) bool {
	if s.filter == nil {
		return false
	}
	mask := uint64(len(s.filter))*64 - 1
	a, b := filterProbes(id, mask)
	return s.filter[a/64]&(1<<(a%64)) != 0 && s.filter[b/64]&(1<<(b%64)) != 0
}

func (s *Store[V]) addToFilter(id vertex.ID) {
	if bits := uint64(len(s.filter)) * 64; bits < 16*uint64(len(s.old)) {
		s.filter = make([]uint64, max(64, 2*len(s.filter))) // rebuild, twice the size
		for k := range s.old {
			s.setFilter(k)
		}
		return
	}
	s.setFilter(id)
}

func (s *Store[V]) setFilter(id vertex.ID) {
	mask := uint64(len(s.filter))*64 - 1
	a, b := filterProbes(id, mask)
	s.filter[a/64] |= 1 << (a % 64)
	s.filter[b/64] |= 1 << (b % 64)
}

// New returns an empty store whose fresh IDs start at first.
func New[V any](first vertex.ID) Store[V] {
	return Store[V]{old: make(map[vertex.ID]*V), first: first}
}

// Lookup returns the frame's version of id; ok is false when the frame has none
// and the caller must look below. A nil vertex with ok true means "no vertex".
func (s *Store[V]) Lookup(id vertex.ID) (v *V, ok bool) {
	if s.packed != nil {
		if s.mayHold(id) {
			if v, ok = s.old[id]; ok {
				return v, ok
			}
		}
		return s.packed.lookup(id, s.first)
	}
	if id >= s.first {
		if i := uint64(id - s.first); i < uint64(len(s.fresh)) {
			return s.fresh[i], true
		}
		return nil, true
	}
	if !s.mayHold(id) {
		return nil, false
	}
	v, ok = s.old[id]
	return v, ok
}

// Set records v (nil: deleted) as the frame's version of id.
func (s *Store[V]) Set(id vertex.ID, v *V) {
	if id < s.first || s.packed != nil {
		s.old[id] = v
		s.addToFilter(id)
		return
	}
	i := int(id - s.first)
	if i >= len(s.fresh) {
		if i >= cap(s.fresh) {
			grown := make([]*V, i+1, max(2*cap(s.fresh), i+1, 256))
			copy(grown, s.fresh)
			s.fresh = grown
		} else {
			s.fresh = s.fresh[:i+1]
		}
	}
	s.fresh[i] = v
}

// Extend sizes the fresh-ID slice to hold every ID up to top, so that SetSized
// can fill it from several goroutines (at different IDs) without growing it.
func (s *Store[V]) Extend(top vertex.ID) {
	if top < s.first || s.packed != nil {
		return
	}
	n := int(top-s.first) + 1
	if n > len(s.fresh) {
		s.Reserve(n - len(s.fresh))
		s.fresh = s.fresh[:n]
	}
}

// SetSized records v at fresh ID id when Extend has made room for it, and
// reports whether it did. It writes only that slot.
func (s *Store[V]) SetSized(id vertex.ID, v *V) bool {
	if id < s.first || uint64(id-s.first) >= uint64(len(s.fresh)) {
		return false
	}
	s.fresh[id-s.first] = v
	return true
}

// Reserve makes room for n more fresh IDs without regrowing the slice.
func (s *Store[V]) Reserve(n int) {
	if cap(s.fresh)-len(s.fresh) < n && s.packed == nil {
		grown := make([]*V, len(s.fresh), len(s.fresh)+n)
		copy(grown, s.fresh)
		s.fresh = grown
	}
}

// Each calls fn for every change: every fresh vertex, and every older vertex with
// its new version (both v and rec nil for a deletion). A packed vertex comes
// as its record rec (v nil), which stays valid while the store is reachable
// and until its next Finish (which frees the buffer a repack replaces) or
// Release; one whose pack is in flight (StartPack) as itself.
func (s *Store[V]) Each(fn func(id vertex.ID, v *V, rec []byte)) {
	if s.packed != nil {
		s.packed.each(s.first, s.old, fn)
	}
	for id, v := range s.old {
		fn(id, v, nil)
	}
	for i, v := range s.fresh {
		if v != nil {
			fn(s.first+vertex.ID(i), v, nil)
		}
	}
}

// A Ref names one change a store holds (EachRef) without a Go pointer, so
// that a persist's list of a million changes is memory the garbage collector
// does not scan: 1 + the ordinal of a packed record, RefVertex for a vertex
// the store holds as itself (not packed, or Set after Pack), or RefDeleted.
type Ref uint32

const (
	RefDeleted Ref = 0
	RefVertex  Ref = math.MaxUint32
)

// EachRef calls fn for every change Each hands out, with its Ref instead of
// the vertex or record: Change returns them.
func (s *Store[V]) EachRef(fn func(id vertex.ID, r Ref)) {
	if s.packed != nil {
		s.packed.eachRef(s.first, s.old, fn)
	}
	for id, v := range s.old {
		r := RefVertex
		if v == nil {
			r = RefDeleted
		}
		fn(id, r)
	}
	for i, v := range s.fresh {
		if v != nil {
			fn(s.first+vertex.ID(i), RefVertex)
		}
	}
}

// Change returns the change of id that r (from EachRef) names, as Each hands
// it out: the vertex (rec nil), or its packed record (v nil), valid as Each's
// are; both nil for a deletion. Nothing may be Set in the store between
// EachRef and Change (a persist's stores are no longer written); a Finish
// between them may return a record stripped of what Codec.Strip removes.
func (s *Store[V]) Change(id vertex.ID, r Ref) (v *V, rec []byte) {
	switch r {
	case RefDeleted:
		return nil, nil
	case RefVertex:
		v, _ = s.Lookup(id)
		return v, nil
	}
	p := s.packed
	if p.nodes != nil {
		return p.nodes[r-1], nil
	}
	return nil, p.record(p.buf, uint32(r))
}

// Len is the number of vertices the frame holds (deletions of older vertices
// included).
func (s *Store[V]) Len() int {
	n := len(s.old)
	if s.packed != nil {
		n += s.packed.n // an ID Set after Pack may be counted twice
	}
	for _, v := range s.fresh {
		if v != nil {
			n++
		}
	}
	return n
}

// First is the first fresh ID: IDs from it up were allocated by the frame
// itself and exist nowhere below it.
func (s *Store[V]) First() vertex.ID { return s.first }
