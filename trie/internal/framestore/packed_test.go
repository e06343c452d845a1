package framestore

import (
	"strconv"
	"strings"
	"testing"

	"github.com/hexstate/hexstate/vertex"
)

// TestPack: a packed store answers every lookup as before packing (a fresh ID
// with no vertex, an older ID deleted, an older ID never held), a Set after
// Pack wins over the record in Lookup and Each, Each yields each ID once,
// and the chain index leads LookupAt to the records.
func TestPack(t *testing.T) {
	// Values from 1<<30 up are padded to a record over 127 bytes, whose length
	// takes two bytes.
	enc := func(dst []byte, v *int) []byte {
		dst = strconv.AppendInt(dst, int64(*v), 10)
		if *v >= 1<<30 {
			dst = append(dst, strings.Repeat(" ", 200)...)
		}
		return dst
	}
	dec := func(rec []byte) *int {
		n, err := strconv.Atoi(strings.TrimRight(string(rec), " "))
		if err != nil {
			t.Fatalf("record %q: %v", rec, err)
		}
		return &n
	}
	val := func(n int) *int { return &n }
	s := New[int](1000)
	big := 1 << 40
	s.Set(5, val(50))
	s.Set(6, nil)
	s.Set(1000, val(7))
	s.Set(1002, val(big))
	want := map[vertex.ID]*int{5: val(50), 6: nil, 1000: val(7), 1001: nil, 1002: val(big)}
	check := func(when string) {
		t.Helper()
		for id, w := range want {
			v, ok := s.Lookup(id)
			if !ok || (v == nil) != (w == nil) || (v != nil && *v != *w) {
				t.Fatalf("%s: Lookup(%d) = %v, %v; want %v", when, id, v, ok, w)
			}
		}
		if _, ok := s.Lookup(7); ok || s.Holds(7) {
			t.Fatalf("%s: Lookup or Holds of an ID the store never held answers", when)
		}
		for id := range want {
			if !s.Holds(id) {
				t.Fatalf("%s: Holds(%d) is false", when, id)
			}
		}
	}
	check("before Pack")
	checkEachRef(t, &s, "before Pack")
	scratch := s.Pack(nil, &Codec[int]{Encode: enc, Decode: dec})
	if !s.Packed() || cap(scratch) == 0 {
		t.Fatalf("Pack did not pack (packed %v)", s.Packed())
	}
	check("after Pack")
	s.Set(5, val(51)) // a later Set wins
	want[5] = val(51)
	check("after a Set")
	checkEachRef(t, &s, "after a Set")
	seen := map[vertex.ID]int{}
	s.Each(func(id vertex.ID, v *int, rec []byte) {
		seen[id]++
		if rec != nil {
			v = dec(rec)
		}
		if w := want[id]; (v == nil) != (w == nil) || (v != nil && *v != *w) {
			t.Fatalf("Each: %d = %v, want %v", id, v, w)
		}
	})
	for _, id := range []vertex.ID{5, 6, 1000, 1002} {
		if seen[id] != 1 {
			t.Fatalf("Each yields %d %d times", id, seen[id])
		}
	}
	x := NewChainIndex(16)
	Add(x, &s, 1, nil)
	for _, id := range []vertex.ID{1000, 1002} {
		seq, rec, ok := x.Where(id)
		if !ok || seq != 1 || rec == 0 {
			t.Fatalf("Where(%d) = %d, %d, %v: no record named", id, seq, rec, ok)
		}
		if v, ok := s.LookupAt(id, rec); !ok || *v != *want[id] {
			t.Fatalf("LookupAt(%d) = %v, %v", id, v, ok)
		}
	}
	if _, rec, _ := x.Where(6); rec != 0 {
		t.Fatalf("a deleted ID has a record at %d", rec)
	}
	emptied := New[int](^vertex.ID(0)) // a persisted frame's store is replaced so
	if v, ok := emptied.LookupAt(1000, 3); v != nil || ok {
		t.Fatalf("LookupAt on an emptied store = %v, %v, want no answer", v, ok)
	}
}

// TestRepack: a newer store added to the chain index reports the records it
// supersedes in the older one; Supersede says once when the spare bytes of
// the records noted reach a quarter of the records' (records with no spare
// bytes are not counted); a repack strips exactly the noted records while every
// ordinal the index holds still leads to its record, and Finish frees the
// records' old buffer.
func TestRepack(t *testing.T) {
	// A record is the value, then "+" and as many '#' as the value says:
	// its spare bytes.
	c := &Codec[int]{
		Encode: func(dst []byte, v *int) []byte {
			dst = strconv.AppendInt(dst, int64(*v), 10)
			return append(append(dst, '+'), strings.Repeat("#", max(*v, 0))...)
		},
		Decode: func(rec []byte) *int {
			n, err := strconv.Atoi(string(rec[:strings.IndexByte(string(rec), '+')]))
			if err != nil {
				t.Fatalf("record %q: %v", rec, err)
			}
			return &n
		},
		Spare: func(rec []byte) int { return strings.Count(string(rec), "#") },
		Strip: func(dst, rec []byte) []byte { return append(dst, strings.TrimRight(string(rec), "#")...) },
	}
	older, newer := New[int](1000), New[int](2000)
	for id := vertex.ID(1); id <= 40; id++ {
		v := 200 // 200 spare bytes each for 1..30: ~6,200 bytes of records
		if id > 30 {
			v = 0 // nothing to strip
		}
		older.Set(id, &v)
		if id <= 15 || id > 30 {
			w := -int(id)
			newer.Set(id, &w)
		}
	}
	older.Pack(nil, c)
	newer.Pack(nil, c)
	x := NewChainIndex(64)
	Add(x, &older, 1, nil)
	recs, want := map[vertex.ID]uint32{}, map[vertex.ID]string{}
	for id := vertex.ID(1); id <= 40; id++ {
		_, recs[id], _ = x.Where(id)
		want[id] = string(older.packed.record(older.packed.buf, recs[id]))
	}
	// newer supersedes 1..15 (3,000 spare bytes: a quarter of the records'
	// is crossed at the 8th) and 31..40 (none to count).
	reports, due := 0, 0
	Add(x, &newer, 2, func(seq, rec uint32) {
		if seq != 1 {
			t.Fatalf("superseded reported for seq %d, want 1", seq)
		}
		reports++
		if older.Supersede(rec) {
			due++
		}
	})
	if reports != 25 || due != 1 {
		t.Fatalf("%d records reported superseded, repack due %d times; want 25 and once", reports, due)
	}
	if older.Supersede(recs[1]) {
		t.Fatal("a record noted twice makes a repack due again")
	}
	size := len(older.packed.buf.b)
	before := older.packed.buf.mem
	older.StartRepack()
	older.Finish()
	if before.region.Bytes() != nil {
		t.Fatal("the records' old buffer was not freed when the repack's took its place")
	}
	for id := vertex.ID(1); id <= 40; id++ {
		v, ok := older.LookupAt(id, recs[id])
		if w := map[bool]int{true: 200, false: 0}[id <= 30]; !ok || *v != w {
			t.Fatalf("after Repack, LookupAt(%d) = %v, %v; want %d", id, v, ok, w)
		}
		got := string(older.packed.record(older.packed.buf, recs[id]))
		if id <= 15 && (strings.Contains(got, "#") || got == want[id]) || id > 15 && got != want[id] {
			t.Fatalf("after Repack, record of %d is %q (was %q)", id, got, want[id])
		}
	}
	if got := len(older.packed.buf.b); got > size-15*200 {
		t.Fatalf("%d bytes of records after stripping 3,000 of %d", got, size)
	}
}

// TestStartPack: while a pack runs on its goroutine the store hands out its
// vertices themselves (Lookup, LookupAt, Each), with their ordinals already
// in the chain index, and notes no supersession; Finish puts the records in
// place, after which lookups decode them.
func TestStartPack(t *testing.T) {
	c := &Codec[int]{
		Encode: func(dst []byte, v *int) []byte { return strconv.AppendInt(dst, int64(*v), 10) },
		Decode: func(rec []byte) *int { n, _ := strconv.Atoi(string(rec)); return &n },
		Spare:  func([]byte) int { return 1 },
		Strip:  func(dst, rec []byte) []byte { return append(dst, rec[:len(rec)-1]...) },
	}
	s := New[int](100)
	vals := map[vertex.ID]*int{}
	for _, id := range []vertex.ID{5, 7, 100, 101} {
		v := int(id) * 11
		vals[id] = &v
		s.Set(id, &v)
	}
	s.StartPack(nil, c)
	x := NewChainIndex(16)
	Add(x, &s, 1, nil)
	if s.Packed() {
		t.Fatal("Packed before Finish")
	}
	for id, want := range vals {
		_, rec, _ := x.Where(id)
		if v, ok := s.LookupAt(id, rec); !ok || v != want {
			t.Fatalf("in flight, LookupAt(%d) = %p, want the vertex itself %p", id, v, want)
		}
		if v, ok := s.Lookup(id); !ok || v != want {
			t.Fatalf("in flight, Lookup(%d) = %p, want %p", id, v, want)
		}
		if s.Supersede(rec) {
			t.Fatal("a repack is due for a store whose records are not in place")
		}
	}
	s.Each(func(id vertex.ID, v *int, rec []byte) {
		if v != vals[id] || rec != nil {
			t.Fatalf("in flight, Each(%d) = %p, %q", id, v, rec)
		}
	})
	checkEachRef(t, &s, "in flight")
	s.Finish()
	checkEachRef(t, &s, "after Finish")
	if !s.Packed() {
		t.Fatal("not Packed after Finish")
	}
	for id, want := range vals {
		_, rec, _ := x.Where(id)
		if v, ok := s.LookupAt(id, rec); !ok || v == want || *v != *want {
			t.Fatalf("after Finish, LookupAt(%d) = %v (%p), want a decoded %d", id, *v, v, *want)
		}
	}
}

// checkEachRef asserts that EachRef names, and Change returns, exactly the
// changes Each hands out: the same IDs once each, the same vertex (by
// pointer) or the same record bytes, and the deletions.
func checkEachRef[V any](t *testing.T, s *Store[V], when string) {
	t.Helper()
	type got struct {
		v   *V
		rec string
		del bool
	}
	each := map[vertex.ID]got{}
	s.Each(func(id vertex.ID, v *V, rec []byte) {
		each[id] = got{v, string(rec), v == nil && rec == nil}
	})
	n := 0
	s.EachRef(func(id vertex.ID, r Ref) {
		n++
		v, rec := s.Change(id, r)
		g := got{v, string(rec), v == nil && rec == nil}
		if w, ok := each[id]; !ok || g != w || g.del != (r == RefDeleted) {
			t.Fatalf("%s: EachRef(%d) names ref %d: %+v; Each hands out %+v", when, id, r, g, w)
		}
	})
	if n != len(each) {
		t.Fatalf("%s: EachRef names %d changes, Each hands out %d", when, n, len(each))
	}
}

// TestStartPackPanic: a codec that panics on the pack's goroutine does not
// end the process there; Finish raises the panic on its caller's goroutine.
func TestStartPackPanic(t *testing.T) {
	c := &Codec[int]{
		Encode: func([]byte, *int) []byte { panic("bad vertex") },
		Decode: func([]byte) *int { return nil },
	}
	s := New[int](10)
	v := 1
	s.Set(10, &v)
	s.StartPack(nil, c)
	defer func() {
		if r := recover(); r != "bad vertex" {
			t.Fatalf("Finish raised %v, want the goroutine's panic", r)
		}
	}()
	s.Finish()
	t.Fatal("Finish returned after the pack's goroutine panicked")
}

// TestRelease: Release waits for a pack in flight and frees the records of
// both the store and the pack at once, leaving the store empty.
func TestRelease(t *testing.T) {
	c := &Codec[int]{
		Encode: func(dst []byte, v *int) []byte { return strconv.AppendInt(dst, int64(*v), 10) },
		Decode: func(rec []byte) *int { n, _ := strconv.Atoi(string(rec)); return &n },
	}
	packed := New[int](100)
	for id := vertex.ID(100); id < 200; id++ {
		v := int(id)
		packed.Set(id, &v)
	}
	packed.Pack(nil, c)
	mem := packed.packed.buf.mem
	packed.Release()
	if mem.region.Bytes() != nil || packed.Len() != 0 || packed.Packed() {
		t.Fatalf("after Release: records still mapped (%v), %d vertices, packed %v", mem.region.Bytes() != nil, packed.Len(), packed.Packed())
	}

	inFlight := New[int](100)
	for id := vertex.ID(100); id < 200; id++ {
		v := int(id)
		inFlight.Set(id, &v)
	}
	inFlight.StartPack(nil, c)
	r := inFlight.packed.next
	inFlight.Release() // waits for the pack's goroutine
	if r.buf == nil || r.buf.mem.region.Bytes() != nil || inFlight.Len() != 0 {
		t.Fatalf("after Release of a store whose pack was in flight: its records still mapped, or %d vertices left", inFlight.Len())
	}
}
