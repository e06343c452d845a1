package framestore

import (
	"encoding/binary"
	"math"

	"github.com/hexstate/hexstate/vertex"
)

// packed is a sealed store's vertices as records in one buffer, with no Go
// pointers: the garbage collector never scans it, and a record is a fraction
// of its decoded vertex's size (docs/design.md §5, "Sealed frames packed").
// Offsets are stored plus one, so that 0 can mean "no vertex" (a fresh ID)
// or "deleted" (an older ID).
type packed[V any] struct {
	recs   []byte               // each record preceded by its length, a uvarint
	fresh  []uint32             // by ID-first: 1 + offset of the ID's record in recs; 0: no vertex
	old    map[vertex.ID]uint32 // older IDs: 1 + offset of the record; 0: deleted
	n      int                  // vertices and deletions held
	decode func(rec []byte) *V
}

// record returns the record at 1-based offset at.
func (p *packed[V]) record(at uint32) []byte {
	b := p.recs[at-1:]
	l, n := binary.Uvarint(b)
	return b[n : n+int(l) : n+int(l)]
}

// Pack replaces the store's vertices by their records, encoded by encode and
// decoded again by decode on every Lookup (each Lookup of a packed vertex
// returns a V of its own) and for Each. scratch is a buffer Pack may use and
// returns for the next call. The store stays readable and writable: a Set
// after Pack is kept beside the records and wins over them in Lookup and Each
// (the trie Sets into a sealed frame only a copy of a vertex with the key a
// hash found, so reading the record instead, as LookupAt does, gives the same
// vertex without that key). Pack does nothing on a store packed already, or
// one whose records would not fit 4 GiB.
func (s *Store[V]) Pack(scratch []byte, encode func(dst []byte, v *V) []byte, decode func(rec []byte) *V) []byte {
	if s.packed != nil {
		return scratch
	}
	p := &packed[V]{old: make(map[vertex.ID]uint32, len(s.old)), decode: decode}
	buf := scratch[:0]
	add := func(v *V) uint32 {
		at := len(buf)
		var l [binary.MaxVarintLen64]byte
		buf = append(buf, l[:1]...) // a placeholder for short records
		buf = encode(buf, v)
		if n := len(buf) - at - 1; n >= 0x80 {
			k := binary.PutUvarint(l[:], uint64(n))
			buf = append(buf, l[:k-1]...)
			copy(buf[at+k:], buf[at+1:at+1+n])
			copy(buf[at:], l[:k])
		} else {
			buf[at] = byte(n)
		}
		return uint32(at) + 1
	}
	for id, v := range s.old {
		if v == nil {
			p.old[id] = 0
		} else {
			p.old[id] = add(v)
		}
		if len(buf) >= math.MaxUint32 {
			return buf[:0]
		}
	}
	p.fresh = make([]uint32, len(s.fresh))
	for i, v := range s.fresh {
		if v != nil {
			p.fresh[i] = add(v)
			p.n++
		}
		if len(buf) >= math.MaxUint32 {
			return buf[:0]
		}
	}
	p.n += len(p.old)
	p.recs = append(make([]byte, 0, len(buf)), buf...)
	s.packed = p
	s.old, s.fresh, s.filter = make(map[vertex.ID]*V), nil, nil
	return buf[:0]
}

// Packed reports whether Pack replaced the store's vertices by records.
func (s *Store[V]) Packed() bool { return s.packed != nil }

// find returns where the records keep id's (0: no vertex, or deleted) and
// whether they answer for id at all.
func (p *packed[V]) find(id, first vertex.ID) (at uint32, ok bool) {
	if id >= first {
		if i := uint64(id - first); i < uint64(len(p.fresh)) {
			at = p.fresh[i]
		}
		return at, true
	}
	at, ok = p.old[id]
	return at, ok
}

// lookup is Lookup in the records.
func (p *packed[V]) lookup(id, first vertex.ID) (*V, bool) {
	at, ok := p.find(id, first)
	if at == 0 {
		return nil, ok
	}
	return p.decode(p.record(at)), true
}

// each calls fn for every change the records hold, except those of IDs in
// skip (the vertices Set after Pack).
func (p *packed[V]) each(first vertex.ID, skip map[vertex.ID]*V, fn func(id vertex.ID, v *V, rec []byte)) {
	for id, at := range p.old {
		if _, ok := skip[id]; ok {
			continue
		}
		if at == 0 {
			fn(id, nil, nil)
		} else {
			fn(id, nil, p.record(at))
		}
	}
	for i, at := range p.fresh {
		if at == 0 {
			continue
		}
		id := first + vertex.ID(i)
		if _, ok := skip[id]; !ok {
			fn(id, nil, p.record(at))
		}
	}
}

// ids calls fn for every ID the records hold, with where its record is (0:
// deleted).
func (p *packed[V]) ids(first vertex.ID, fn func(id vertex.ID, rec uint32)) {
	for id, at := range p.old {
		fn(id, at)
	}
	for i, at := range p.fresh {
		if at != 0 {
			fn(first+vertex.ID(i), at)
		}
	}
}

// Holds reports whether Lookup of id answers (ok), without decoding a
// packed record.
func (s *Store[V]) Holds(id vertex.ID) bool {
	if s.packed == nil {
		_, ok := s.Lookup(id)
		return ok
	}
	if s.mayHold(id) {
		if _, ok := s.old[id]; ok {
			return true
		}
	}
	_, ok := s.packed.find(id, s.first)
	return ok
}

// LookupAt is Lookup of id given where the index says a packed store keeps
// its record (rec, from ChainIndex.Where; 0: unknown): the record is decoded
// without a probe of the store's map. A store that is not packed (any more:
// a persisted frame's store is replaced by an empty one) is asked with
// Lookup. A vertex Set after Pack is not returned: the record's version is
// the same vertex, whose key a hash of the sealed frame had not stored yet
// (see Pack).
func (s *Store[V]) LookupAt(id vertex.ID, rec uint32) (*V, bool) {
	if rec == 0 || s.packed == nil {
		return s.Lookup(id)
	}
	return s.packed.decode(s.packed.record(rec)), true
}
