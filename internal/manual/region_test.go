package manual

import (
	"os"
	"runtime"
	"testing"
	"unsafe"
)

func TestRegion(t *testing.T) {
	r := New(3 << 20)
	b := r.Bytes()
	if len(b) != 3<<20 {
		t.Fatalf("len %d, want %d", len(b), 3<<20)
	}
	for i := range b {
		if b[i] != 0 {
			t.Fatalf("byte %d is %d, want zero", i, b[i])
		}
	}
	b[0], b[len(b)-1] = 1, 2
	if got := r.Bytes(); got[0] != 1 || got[len(got)-1] != 2 {
		t.Fatalf("writes not kept: %d %d", got[0], got[len(got)-1])
	}
	r.Free()
	if r.Bytes() != nil {
		t.Fatal("Bytes after Free is not nil")
	}
	r.Free() // a second Free does nothing
	if z := New(0); z.Bytes() != nil {
		t.Fatal("New(0) returned memory")
	}
}

func TestArena(t *testing.T) {
	var a Arena
	b := a.Buffer(100)
	if len(b) != 0 || cap(b) != ArenaChunk {
		t.Fatalf("first buffer: len %d cap %d, want 0 and a chunk", len(b), cap(b))
	}
	b = append(b, "first"...)
	// Each buffer is a chunk of its own.
	c := a.Buffer(10)
	c = append(c, "second"...)
	if string(b) != "first" || string(c) != "second" || a.Bytes() != 2*ArenaChunk {
		t.Fatalf("buffers %q %q, arena %d bytes", b, c, a.Bytes())
	}
	if big := a.Buffer(ArenaChunk + 1); len(big) != 0 || cap(big) < ArenaChunk+1 || a.Bytes() < 3*ArenaChunk+1 {
		t.Fatalf("a large buffer: len %d cap %d, arena %d bytes (want a region of its own, counted)", len(big), cap(big), a.Bytes())
	}
	a.Reset() // both chunks were used: both kept; the large buffer's region freed
	if a.Bytes() != 2*ArenaChunk {
		t.Fatalf("after Reset the arena holds %d bytes, want %d", a.Bytes(), 2*ArenaChunk)
	}
	d := a.Buffer(10)
	d = append(d, "reused"...)
	a.Reset() // one chunk used: the other is freed
	if a.Bytes() != ArenaChunk {
		t.Fatalf("after a one-chunk round the arena holds %d bytes, want %d", a.Bytes(), ArenaChunk)
	}
	a.Free()
	if a.Bytes() != 0 {
		t.Fatalf("after Free the arena holds %d bytes", a.Bytes())
	}
}

// TestMappedCountsPages: Mapped counts a region in whole pages while it is
// mapped, and nothing of it once freed.
func TestMappedCountsPages(t *testing.T) {
	before := Mapped()
	r := New(10)
	if r.m == nil {
		t.Skip("no anonymous mappings here: regions are heap slices, not counted")
	}
	if got := Mapped() - before; got != int64(os.Getpagesize()) {
		t.Fatalf("a 10-byte region counted as %d bytes, want one page (%d)", got, os.Getpagesize())
	}
	r.Free()
	if got := Mapped() - before; got != 0 {
		t.Fatalf("after Free, %d bytes still counted", got)
	}
}

// TestArenaSlice: a typed slice from the arena holds what is appended to it,
// pointers into the arena's buffers included, across collections; the arena
// counts its region until Reset frees it.
func TestArenaSlice(t *testing.T) {
	type rec struct {
		id  uint64
		val []byte
	}
	var a Arena
	s := Slice[rec](&a, 1000)
	if len(s) != 0 || cap(s) != 1000 {
		t.Fatalf("slice: len %d cap %d, want 0 and 1000", len(s), cap(s))
	}
	if got := a.Bytes(); got < 1000*int(unsafe.Sizeof(rec{})) {
		t.Fatalf("arena holds %d bytes, want at least the slice's", got)
	}
	buf := a.Buffer(8000)
	for i := range 1000 {
		start := len(buf)
		buf = append(buf, byte(i), byte(i>>8))
		s = append(s, rec{id: uint64(i), val: buf[start:len(buf):len(buf)]})
	}
	if cap(s) != 1000 {
		t.Fatalf("the slice moved: cap %d", cap(s))
	}
	runtime.GC()
	for i, r := range s {
		if r.id != uint64(i) || len(r.val) != 2 || r.val[0] != byte(i) || r.val[1] != byte(i>>8) {
			t.Fatalf("record %d = %d %v", i, r.id, r.val)
		}
	}
	if Slice[rec](&a, 0) != nil {
		t.Fatal("an empty slice has memory")
	}
	a.Reset()
	if a.Bytes() != ArenaChunk {
		t.Fatalf("after Reset the arena holds %d bytes, want the one chunk used", a.Bytes())
	}
	a.Free()
}

// TestTyped: a region seen as a slice of pointer-free elements holds as many
// as fit, keeps what is written to them, and an empty region gives none.
func TestTyped(t *testing.T) {
	type pair struct{ a, b uint64 }
	r := New(1000)
	s := Typed[pair](&r)
	if len(s) != 1000/16 {
		t.Fatalf("%d elements in 1000 bytes, want %d", len(s), 1000/16)
	}
	for i := range s {
		s[i] = pair{uint64(i), uint64(2 * i)}
	}
	for i, p := range Typed[pair](&r) {
		if p.a != uint64(i) || p.b != uint64(2*i) {
			t.Fatalf("element %d = %v", i, p)
		}
	}
	r.Free()
	var empty Region
	if Typed[pair](&empty) != nil {
		t.Fatal("an empty region has elements")
	}
}
