package framestore

import (
	"encoding/binary"
	"math"
	"runtime"
	"slices"
	"sync"
	"unsafe"

	"github.com/hexstate/hexstate/internal/manual"
	"github.com/hexstate/hexstate/vertex"
)

// Codec is how a packed store turns its vertices into records and back.
type Codec[V any] struct {
	// Encode appends v's record to dst; Decode returns a V of its own for a
	// record Encode made.
	Encode func(dst []byte, v *V) []byte
	Decode func(rec []byte) *V
	// Spare returns how many bytes of rec serve only while its version is
	// the newest (the trie: a branch's children's keys, which a re-hash of
	// the newest version reads); Strip appends rec without them, exactly
	// Spare(rec) bytes shorter. Both nil: records are never stripped.
	Spare func(rec []byte) int
	Strip func(dst, rec []byte) []byte
}

// packed is a sealed store's vertices as records in one buffer, with no Go
// pointers: the garbage collector never scans it, and a record is a fraction
// of its decoded vertex's size (docs/design.md §5, "Sealed frames packed").
//
// A record is named by its ordinal (stored plus one, so that 0 can mean "no
// vertex", a fresh ID, or "deleted", an older ID), not by its offset: a
// repack (Store.StartRepack) moves records into a new buffer, and the chain
// indexes of every line that holds the store keep naming the same ordinals.
type packed[V any] struct {
	buf   *recBuf   // the records, each preceded by its length, a uvarint
	offs  []uint32  // by ordinal: where the record starts in buf
	ids   *idTables // which ID has which record
	n     int       // vertices and deletions held
	codec *Codec[V]
	// nodes holds the vertices by ordinal while the first pack is in flight
	// (StartPack), in place of records; nil once they are in place.
	nodes []*V
	// spare is, by ordinal, Codec.Spare of the record (0 once stripped, or
	// when too large to note), with superseded set once a newer frame holds
	// a newer version (Supersede): the next repack strips it. pending sums
	// the spare bytes so marked. One array, so that marking a record of an
	// older frame costs one cache miss.
	spare   []uint16
	pending int
	next    *repack // in flight, if not nil
}

// superseded is the bit of a packed store's spare entry that marks its
// record superseded.
const superseded = 1 << 15

// recBuf is a packed store's records, in memory from manual, outside the Go
// heap: it holds no pointers, and on the heap its bytes — most of what the
// sealed frames hold — would count towards the heap the collector lets grow
// to twice what is live, and each repack's copy would bring its next
// collection forward (docs/design.md §5, "Packed records outside the Go
// heap"). Whoever reads the bytes holds the recBuf while it does: a store's
// methods take p.buf into a local first and keep it alive (runtime.KeepAlive)
// until they are done with them. The memory is freed when Finish replaces the
// buffer (every reader of a sealed frame's records holds the database's
// lock, and Finish is called under its exclusive lock), by Release (a store
// nothing reads any more), or else when the recBuf is found unreachable (a
// frame dropped unpersisted).
type recBuf struct {
	b   []byte
	mem *recMem
}

// idTables names a packed store's records by ID: the fresh IDs by ID-first,
// the older ones (IDs below the store's first) in ascending order beside
// their ordinals, found by binary search. Sorted arrays take 12 bytes per
// older ID where a map took ~26, and they live in memory from manual with
// the records, outside the Go heap: lookups by ID are rare (the chain index
// names a packed vertex's record), so the search costs little. The memory
// is freed by Release, or else when the idTables is unreachable.
type idTables struct {
	fresh   []uint32    // by ID-first: 1 + the ID's ordinal; 0: no vertex
	oldIDs  []vertex.ID // the older IDs, ascending
	oldOrds []uint32    // by position in oldIDs: 1 + the ordinal; 0: deleted
	mem     *recMem
}

// newIDTables returns zeroed tables with room for the given numbers of
// fresh and older IDs.
func newIDTables(fresh, old int) *idTables {
	ords := (4*(fresh+old) + 7) &^ 7 // the uint32s, then the IDs 8-aligned
	m := &recMem{region: manual.New(ords + 8*old)}
	t := &idTables{mem: m}
	if b := m.region.Bytes(); len(b) > 0 {
		u := unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), fresh+old)
		t.fresh, t.oldOrds = u[:fresh:fresh], u[fresh:]
		if old > 0 {
			t.oldIDs = unsafe.Slice((*vertex.ID)(unsafe.Pointer(&b[ords])), old)
		}
	}
	runtime.AddCleanup(t, (*recMem).free, m)
	return t
}

// old returns 1 + the ordinal of older ID id's record (0: deleted) and
// whether the tables hold id.
func (t *idTables) old(id vertex.ID) (ord uint32, ok bool) {
	i, ok := slices.BinarySearch(t.oldIDs, id)
	if ok {
		ord = t.oldOrds[i]
	}
	runtime.KeepAlive(t)
	return ord, ok
}

// recMem is a recBuf's (or an idTables') memory, freed once: by free, or by
// its owner's cleanup.
type recMem struct {
	once   sync.Once
	region manual.Region
}

func (m *recMem) free() { m.once.Do(m.region.Free) }

// newRecBuf returns an empty recBuf with room for n bytes: appends beyond
// that move its bytes to the Go heap, as any append does.
func newRecBuf(n int) *recBuf {
	m := &recMem{region: manual.New(n)}
	rb := &recBuf{b: m.region.Bytes()[:0:n], mem: m}
	runtime.AddCleanup(rb, (*recMem).free, m)
	return rb
}

// span returns where the record of 1-based ordinal ord starts (its length
// first) and where its bytes start and end, in the records rb holds (p.buf,
// or the one before a repack, which names each ordinal's record by the same
// offsets until Finish replaces them too).
func (p *packed[V]) span(rb *recBuf, ord uint32) (at, start, end int) {
	at = int(p.offs[ord-1])
	start, end = recordSpan(rb.b, at)
	return at, start, end
}

// recordSpan returns where the bytes of the record at offset at of buf (its
// length first) start and end.
func recordSpan(buf []byte, at int) (start, end int) {
	l, n := binary.Uvarint(buf[at:])
	return at + n, at + n + int(l)
}

// record returns the record of 1-based ordinal ord in rb (p.buf): valid as
// long as the caller holds rb.
func (p *packed[V]) record(rb *recBuf, ord uint32) []byte {
	_, start, end := p.span(rb, ord)
	return rb.b[start:end:end]
}

// Pack replaces the store's vertices by their records, encoded and decoded
// again (on every Lookup: each Lookup of a packed vertex returns a V of its
// own, and for Each) by c. scratch is a buffer Pack may use and returns for
// the next call. The store stays readable and writable: a Set after Pack is
// kept beside the records and wins over them in Lookup and Each (the trie
// Sets into a sealed frame only a copy of a vertex with the key a hash
// found, so reading the record instead, as LookupAt does, gives the same
// vertex without that key). A store packed already is left as it is; one
// whose records would not fit 4 GiB keeps its vertices, by ordinal.
func (s *Store[V]) Pack(scratch []byte, c *Codec[V]) []byte {
	if s.packed != nil {
		return scratch
	}
	p := s.order(c)
	r := &repack{}
	scratch = p.encode(r, scratch)
	p.place(r)
	return scratch
}

// StartPack is Pack on a goroutine of its own: the store's vertices get
// their ordinals now (so ChainIndex.Add names them), and the records are
// encoded beside the caller, through scratch, which the caller hands over;
// Finish puts them in place and hands scratch back. Until then a Lookup
// returns the vertex itself, shared, as an unpacked store does, so the
// vertices must not change meanwhile (the trie packs only a sealed frame
// whose keys are all computed).
func (s *Store[V]) StartPack(scratch []byte, c *Codec[V]) {
	if s.packed != nil {
		return
	}
	p := s.order(c)
	r := &repack{done: make(chan struct{})}
	p.next = r
	go func() {
		defer r.close()
		r.scratch = p.encode(r, scratch)
	}()
}

// order moves the store's vertices into a packed store by ordinal (nodes),
// without records yet.
func (s *Store[V]) order(c *Codec[V]) *packed[V] {
	t := newIDTables(len(s.fresh), len(s.old))
	p := &packed[V]{ids: t, codec: c}
	p.nodes = make([]*V, 0, len(s.old)+len(s.fresh))
	i := 0
	for id := range s.old {
		t.oldIDs[i] = id
		i++
	}
	slices.Sort(t.oldIDs)
	for i, id := range t.oldIDs { // records in ID order
		if v := s.old[id]; v != nil {
			p.nodes = append(p.nodes, v)
			t.oldOrds[i] = uint32(len(p.nodes))
		}
	}
	for i, v := range s.fresh {
		if v != nil {
			p.nodes = append(p.nodes, v)
			t.fresh[i] = uint32(len(p.nodes))
			p.n++
		}
	}
	p.n += len(t.oldIDs)
	s.packed = p
	s.old, s.fresh, s.filter = make(map[vertex.ID]*V), nil, nil
	return p
}

// encode encodes p's vertices by ordinal into r, through scratch (nil: a
// buffer of its own), and returns scratch for reuse. It reads only p.nodes
// and p.codec, which nothing writes while it runs. Records that would not
// fit 4 GiB leave r.buf nil.
func (p *packed[V]) encode(r *repack, scratch []byte) []byte {
	c := p.codec
	buf := scratch[:0]
	r.offs = make([]uint32, len(p.nodes))
	if c.Spare != nil {
		r.spare = make([]uint16, len(p.nodes))
	}
	for i, v := range p.nodes {
		at := len(buf)
		var l [binary.MaxVarintLen64]byte
		buf = append(buf, l[:1]...) // a placeholder for short records
		buf = c.Encode(buf, v)
		if n := len(buf) - at - 1; n >= 0x80 {
			k := binary.PutUvarint(l[:], uint64(n))
			buf = append(buf, l[:k-1]...)
			copy(buf[at+k:], buf[at+1:at+1+n])
			copy(buf[at:], l[:k])
		} else {
			buf[at] = byte(n)
		}
		if len(buf) >= math.MaxUint32 {
			r.offs, r.spare = nil, nil
			return buf[:0]
		}
		r.offs[i] = uint32(at)
		if c.Spare != nil {
			start, end := recordSpan(buf, at)
			if n := c.Spare(buf[start:end]); n < superseded { // a larger one is never stripped
				r.spare[i] = uint16(n)
			}
		}
	}
	r.buf = newRecBuf(len(buf))
	r.buf.b = append(r.buf.b, buf...)
	return buf[:0]
}

// place puts the records of a finished first pack r in place of the
// vertices (which stay when r has no records).
func (p *packed[V]) place(r *repack) {
	if r.buf != nil {
		p.buf, p.offs, p.spare, p.nodes = r.buf, r.offs, r.spare, nil
	}
}

// Supersede notes that a newer frame holds a newer version of the vertex
// whose record is rec (1 + its ordinal, as ChainIndex.Add reports it), so
// that a repack may strip the record of what only the newest version needs.
// It reports, once per repack, when the bytes a repack would drop reach a
// quarter of the records': when a repack is worth its copy.
func (s *Store[V]) Supersede(rec uint32) (repack bool) {
	p := s.packed
	if p == nil || p.nodes != nil || p.spare == nil || rec == 0 || int(rec) > len(p.offs) {
		return false // no records to strip (yet)
	}
	sp := &p.spare[rec-1]
	if *sp == 0 || *sp&superseded != 0 {
		return false
	}
	was := p.pending
	p.pending += int(*sp)
	*sp |= superseded
	return p.worthRepack(was)
}

// worthRepack reports whether p.pending, up from was, has just reached a
// quarter of the records' bytes.
func (p *packed[V]) worthRepack(was int) bool {
	n := len(p.buf.b)
	return 4*p.pending >= n && 4*was < n
}

// repack is a pack or repack in flight (or, for Pack, done): the records
// Supersede had noted when a repack began (spare, a copy of the store's,
// and their pending bytes) stripped, or a first pack's records encoded
// (with their spare bytes), into buf and offs, on a goroutine of its own
// that closes done.
type repack struct {
	done    chan struct{}
	spare   []uint16
	pending int
	buf     *recBuf
	offs    []uint32
	scratch []byte // a first pack's encode buffer, for the caller's next
	panic   any    // what the goroutine panicked with (a bug in the codec), for Finish to raise again
}

// close ends r's goroutine: it keeps a panic for Finish, which raises it on
// the caller's goroutine (where a panic in Pack used to happen, and may be
// recovered), rather than let it end the process.
func (r *repack) close() {
	r.panic = recover()
	close(r.done)
}

// StartRepack begins stripping the records Supersede has noted
// (Codec.Strip) into a new buffer, on a goroutine of its own; Finish
// puts it in place. Meanwhile the store reads its records as before, and
// Supersede may note more, for the repack after. It does nothing when a
// repack is in flight already or nothing is noted.
func (s *Store[V]) StartRepack() {
	p := s.packed
	if p == nil || p.nodes != nil || p.next != nil || p.pending == 0 {
		return
	}
	r := &repack{done: make(chan struct{}), spare: slices.Clone(p.spare), pending: p.pending}
	p.next = r
	go func() {
		defer r.close()
		p.build(r)
	}()
}

// build strips r's records. It reads the records and their offsets, which
// nothing writes while r is in flight (Finish replaces them after it).
func (p *packed[V]) build(r *repack) {
	old := p.buf
	out := newRecBuf(len(old.b) - r.pending) // stripping shortens a length, never lengthens it
	buf := out.b
	offs := make([]uint32, len(p.offs))
	done := 0 // old's records up to here are in buf
	for i, sp := range r.spare {
		if sp&superseded == 0 {
			offs[i] = p.offs[i] - uint32(done-len(buf)) // moves back with the run it is in
			continue
		}
		at, start, end := p.span(old, uint32(i)+1)
		buf = append(buf, old.b[done:at]...)
		offs[i] = uint32(len(buf))
		buf = binary.AppendUvarint(buf, uint64(end-start-int(sp&^superseded)))
		buf = p.codec.Strip(buf, old.b[start:end])
		done = end
	}
	out.b = append(buf, old.b[done:]...)
	r.buf, r.offs = out, offs
	runtime.KeepAlive(old)
}

// Finish waits for the pack (StartPack) or repack (StartRepack) in flight,
// if any (raising again a panic of its goroutine), and puts its buffer in
// place: every ordinal keeps naming its record, and the records' old buffer
// is freed, so the caller makes sure that nothing is reading the store's
// records (the trie calls it under its database's exclusive lock, which
// every reader of a sealed frame holds shared): a record handed out before
// is invalid (see recBuf). It reports whether the records noted since a
// repack began are worth another (StartRepack), and hands back the scratch
// buffer a StartPack was handed.
func (s *Store[V]) Finish() (again bool, scratch []byte) {
	p := s.packed
	if p == nil || p.next == nil {
		return false, nil
	}
	r := p.next
	<-r.done
	p.next = nil
	if r.panic != nil {
		panic(r.panic)
	}
	if p.nodes != nil {
		p.place(r)
		return false, r.scratch
	}
	old := p.buf
	p.buf, p.offs = r.buf, r.offs
	old.mem.free() // see recBuf: no reader holds it now
	for i, sp := range r.spare {
		if sp&superseded != 0 {
			p.spare[i] = 0 // stripped
		}
	}
	p.pending -= r.pending
	return p.worthRepack(0), nil
}

// Release frees the memory of the store's records at once, after waiting
// for a pack or repack in flight; the store is empty afterwards (packed or
// not). It is for a store nothing reads any more (the background writer's,
// once its write has landed and the cache has copied the records; a
// rolled-back frame's): a record read from it before is invalid.
func (s *Store[V]) Release() {
	p := s.packed
	*s = Store[V]{}
	if p == nil {
		return
	}
	if r := p.next; r != nil {
		<-r.done
		p.next = nil
		if r.buf != nil {
			r.buf.mem.free()
		}
	}
	if p.buf != nil {
		p.buf.mem.free()
	}
	p.ids.mem.free()
	p.buf, p.offs, p.ids = nil, nil, nil // a read after Release fails loudly, not on freed memory
}

// Packed reports whether the store's vertices are records (Pack, or
// StartPack and Finish).
func (s *Store[V]) Packed() bool { return s.packed != nil && s.packed.nodes == nil }

// find returns 1 + the ordinal of id's record (0: no vertex, or deleted) and
// whether the records answer for id at all.
func (p *packed[V]) find(id, first vertex.ID) (ord uint32, ok bool) {
	t := p.ids
	if id >= first {
		if i := uint64(id - first); i < uint64(len(t.fresh)) {
			ord = t.fresh[i]
		}
		runtime.KeepAlive(t)
		return ord, true
	}
	return t.old(id)
}

// lookup is Lookup in the records.
func (p *packed[V]) lookup(id, first vertex.ID) (*V, bool) {
	ord, ok := p.find(id, first)
	if ord == 0 {
		return nil, ok
	}
	return p.at(ord), true
}

// at returns the vertex of 1-based ordinal ord: its record decoded, or
// itself while its first pack is in flight.
func (p *packed[V]) at(ord uint32) *V {
	if p.nodes != nil {
		return p.nodes[ord-1]
	}
	rb := p.buf
	v := p.codec.Decode(p.record(rb, ord))
	runtime.KeepAlive(rb)
	return v
}

// yield calls fn with the vertex of 1-based ordinal ord as Each hands it
// out: its record in rb (p.buf, held by the caller), or itself while its
// first pack is in flight.
func (p *packed[V]) yield(rb *recBuf, id vertex.ID, ord uint32, fn func(id vertex.ID, v *V, rec []byte)) {
	if p.nodes != nil {
		fn(id, p.nodes[ord-1], nil)
	} else {
		fn(id, nil, p.record(rb, ord))
	}
}

// each calls fn for every change the records hold, except those of IDs in
// skip (the vertices Set after Pack).
func (p *packed[V]) each(first vertex.ID, skip map[vertex.ID]*V, fn func(id vertex.ID, v *V, rec []byte)) {
	rb := p.buf
	defer runtime.KeepAlive(rb)
	p.eachRef(first, skip, func(id vertex.ID, r Ref) {
		if r == RefDeleted {
			fn(id, nil, nil)
		} else {
			p.yield(rb, id, uint32(r), fn)
		}
	})
}

// eachRef is each naming every change by its Ref (1 + its record's
// ordinal; RefDeleted).
func (p *packed[V]) eachRef(first vertex.ID, skip map[vertex.ID]*V, fn func(id vertex.ID, r Ref)) {
	t := p.ids
	defer runtime.KeepAlive(t)
	for i, id := range t.oldIDs {
		if _, ok := skip[id]; !ok {
			fn(id, Ref(t.oldOrds[i]))
		}
	}
	for i, ord := range t.fresh {
		if id := first + vertex.ID(i); ord != 0 {
			if _, ok := skip[id]; !ok {
				fn(id, Ref(ord))
			}
		}
	}
}

// eachID calls fn for every ID the records hold, with 1 + its record's ordinal
// (0: deleted).
func (p *packed[V]) eachID(first vertex.ID, fn func(id vertex.ID, rec uint32)) {
	t := p.ids
	defer runtime.KeepAlive(t)
	for i, id := range t.oldIDs {
		fn(id, t.oldOrds[i])
	}
	for i, ord := range t.fresh {
		if ord != 0 {
			fn(first+vertex.ID(i), ord)
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
	return s.packed.at(rec), true
}
