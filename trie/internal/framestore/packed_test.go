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
	scratch := s.Pack(nil, enc, dec)
	if !s.Packed() || cap(scratch) == 0 {
		t.Fatalf("Pack did not pack (packed %v)", s.Packed())
	}
	check("after Pack")
	s.Set(5, val(51)) // a later Set wins
	want[5] = val(51)
	check("after a Set")
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
	Add(x, &s, 1)
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
