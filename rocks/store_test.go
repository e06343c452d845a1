package rocks

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sync"
	"testing"

	"github.com/hexstate/hexstate/vertex"
)

func TestPersistenceAcrossReopen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b", "store") // parents created
	s, err := Open(dir, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if a, err := s.Admin(); a != nil || err != nil {
		t.Fatalf("Admin of new store = %q, %v; want nil, nil", a, err)
	}
	wantVertex(t, s, 7, "")
	mustWrite(t, s, &vertex.Batch{
		Puts:  []vertex.Record{{ID: vertex.RootID, Rec: []byte("root")}, {ID: 7, Rec: []byte("seven")}, {ID: math.MaxUint64, Rec: []byte("max")}},
		Admin: []byte("admin-1"),
	})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = mustOpen(t, dir, nil)
	wantVertex(t, s, vertex.RootID, "root")
	wantVertex(t, s, 7, "seven")
	wantVertex(t, s, math.MaxUint64, "max")
	wantVertex(t, s, 8, "")
	if a, err := s.Admin(); string(a) != "admin-1" || err != nil {
		t.Fatalf("Admin = %q, %v", a, err)
	}
	if got, want := s.Stats(), (vertex.ReadStats{PointReads: 4, Records: 3}); got != want {
		t.Fatalf("Stats = %+v, want %+v", got, want)
	}
}

func TestVertexCallerOwnsSlice(t *testing.T) {
	s := mustOpen(t, t.TempDir(), nil)
	rec := []byte("abc")
	mustWrite(t, s, &vertex.Batch{Puts: []vertex.Record{{ID: 2, Rec: rec}}})
	rec[0] = 'X' // Write must have copied
	got, _ := s.Vertex(2)
	got[1] = 'Y'
	wantVertex(t, s, 2, "abc")
}

func TestWriteAtomicBatch(t *testing.T) {
	s := mustOpen(t, t.TempDir(), nil)
	mustWrite(t, s, &vertex.Batch{
		Puts:  []vertex.Record{{ID: 2, Rec: []byte("two")}, {ID: 3, Rec: []byte("three")}, {ID: 4, Rec: []byte("four")}},
		Admin: []byte("A1"),
	})
	// Overwrite, delete, delete-absent, put+delete in one batch, admin unchanged.
	mustWrite(t, s, &vertex.Batch{
		Puts:    []vertex.Record{{ID: 2, Rec: []byte("two'")}, {ID: 5, Rec: []byte("five")}, {ID: 6, Rec: []byte("six")}},
		Deletes: []vertex.ID{3, 99, 6},
	})
	wantVertex(t, s, 2, "two'")
	wantVertex(t, s, 3, "")
	wantVertex(t, s, 4, "four")
	wantVertex(t, s, 5, "five")
	wantVertex(t, s, 6, "")
	if a, _ := s.Admin(); string(a) != "A1" {
		t.Fatalf("Admin = %q after a batch with nil Admin", a)
	}
	// Empty (non-nil) admin is a real value.
	mustWrite(t, s, &vertex.Batch{Admin: []byte{}})
	if a, err := s.Admin(); a == nil || len(a) != 0 || err != nil {
		t.Fatalf("Admin = %q, %v; want empty non-nil", a, err)
	}
	mustWrite(t, s, nil)
	mustWrite(t, s, &vertex.Batch{})
}

func TestWriteSync(t *testing.T) {
	o := testOptions()
	o.Sync = true
	s := mustOpen(t, t.TempDir(), o)
	mustWrite(t, s, &vertex.Batch{Puts: []vertex.Record{{ID: 2, Rec: []byte("x")}}, Admin: []byte("a")})
	wantVertex(t, s, 2, "x")
}

type seen struct {
	id  vertex.ID
	rec string
}

func collect(t *testing.T, s *Store, first vertex.ID, n int) []seen {
	t.Helper()
	var out []seen
	err := s.VertexRange(first, n, func(id vertex.ID, rec []byte) error {
		out = append(out, seen{id, string(rec)})
		return nil
	})
	if err != nil {
		t.Fatalf("VertexRange(%d, %d): %v", first, n, err)
	}
	return out
}

func TestVertexRange(t *testing.T) {
	s := mustOpen(t, t.TempDir(), nil)
	var b vertex.Batch
	// IDs 16..47 except multiples of 3, plus neighbours just outside [32, 48).
	for id := vertex.ID(16); id < 48; id++ {
		if id%3 != 0 {
			b.Puts = append(b.Puts, vertex.Record{ID: id, Rec: []byte(fmt.Sprint("r", id))})
		}
	}
	b.Puts = append(b.Puts, vertex.Record{ID: 256, Rec: []byte("r256")},
		vertex.Record{ID: math.MaxUint64 - 1, Rec: []byte("m1")}, vertex.Record{ID: math.MaxUint64, Rec: []byte("m")})
	mustWrite(t, s, &b)

	check := func(first vertex.ID, n int) {
		t.Helper()
		got := collect(t, s, first, n)
		var want []seen
		for _, r := range b.Puts {
			if r.ID >= first && (uint64(r.ID)-uint64(first)) < uint64(max(n, 0)) {
				want = append(want, seen{r.ID, string(r.Rec)})
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("VertexRange(%d, %d) = %v, want %v", first, n, got, want)
		}
	}
	check(32, 16)
	check(16, 32)
	check(0, 16)
	check(47, 1)
	check(48, 16) // empty
	check(45, 0)
	check(45, -3)
	check(17, 1)
	check(math.MaxUint64-1, 16) // overflowing end: clamped
	check(math.MaxUint64, 1)
	check(0, math.MaxInt)

	// Counting: one range read per call, one record per fn call.
	before := s.Stats()
	got := collect(t, s, 32, 16)
	d := s.Stats()
	if d.RangeReads-before.RangeReads != 1 || d.Records-before.Records != uint64(len(got)) || d.PointReads != before.PointReads {
		t.Fatalf("stats delta %+v -> %+v for %d records", before, d, len(got))
	}

	// An error from fn stops the walk and comes back unchanged.
	stop := errors.New("stop")
	calls := 0
	err := s.VertexRange(16, 32, func(vertex.ID, []byte) error { calls++; return stop })
	if err != stop || calls != 1 {
		t.Fatalf("VertexRange with failing fn = %v after %d calls", err, calls)
	}
}

func TestVertexRangeAfterDeleteAndFlush(t *testing.T) {
	s := mustOpen(t, t.TempDir(), nil)
	var b vertex.Batch
	for id := vertex.ID(100); id < 132; id++ {
		b.Puts = append(b.Puts, vertex.Record{ID: id, Rec: bytes.Repeat([]byte{byte(id)}, 200)})
	}
	mustWrite(t, s, &b)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s, &vertex.Batch{Deletes: []vertex.ID{100, 101, 115, 116}})
	got := collect(t, s, 100, 17)
	if len(got) != 13 || got[0].id != 102 || got[len(got)-1].id != 114 {
		t.Fatalf("got %d records, %v..%v", len(got), got[0].id, got[len(got)-1].id)
	}
	if err := s.Compact(); err != nil {
		t.Fatal(err)
	}
	if got2 := collect(t, s, 100, 17); fmt.Sprint(got2) != fmt.Sprint(got) {
		t.Fatal("compaction changed VertexRange")
	}
}

func TestCloseTwiceAndUseAfterClose(t *testing.T) {
	s, err := Open(t.TempDir(), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s, &vertex.Batch{Puts: []vertex.Record{{ID: 2, Rec: []byte("x")}}})
	_, _ = s.Vertex(2)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.Vertex(2); !errors.Is(err, ErrClosed) {
		t.Errorf("Vertex after Close: %v", err)
	}
	if err := s.VertexRange(2, 16, func(vertex.ID, []byte) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("VertexRange after Close: %v", err)
	}
	if _, err := s.Admin(); !errors.Is(err, ErrClosed) {
		t.Errorf("Admin after Close: %v", err)
	}
	if err := s.Write(&vertex.Batch{Admin: []byte("x")}); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close: %v", err)
	}
	if err := s.Compact(); !errors.Is(err, ErrClosed) {
		t.Errorf("Compact after Close: %v", err)
	}
	if err := s.Flush(); !errors.Is(err, ErrClosed) {
		t.Errorf("Flush after Close: %v", err)
	}
	if _, err := s.BlockStats(); !errors.Is(err, ErrClosed) {
		t.Errorf("BlockStats after Close: %v", err)
	}
	if _, err := s.Property("rocksdb.stats"); !errors.Is(err, ErrClosed) {
		t.Errorf("Property after Close: %v", err)
	}
	if st := s.Stats(); st.PointReads != 1 {
		t.Errorf("Stats after Close = %+v", st)
	}
}

func TestConcurrentReadsWriteAndClose(t *testing.T) {
	s, err := Open(t.TempDir(), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	var b vertex.Batch
	for id := vertex.ID(2); id < 2+64*16; id++ {
		b.Puts = append(b.Puts, vertex.Record{ID: id, Rec: []byte(fmt.Sprint(id))})
	}
	mustWrite(t, s, &b)

	var wg sync.WaitGroup
	errc := make(chan error, 16)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; ; i++ {
				base := vertex.ID(2 + 16*((i*7+g)%64))
				n := 0
				err := s.VertexRange(base, 16, func(id vertex.ID, rec []byte) error {
					if string(rec) != fmt.Sprint(id) {
						return fmt.Errorf("record %d = %q", id, rec)
					}
					n++
					return nil
				})
				if errors.Is(err, ErrClosed) {
					return
				}
				if err == nil && n != 16 {
					err = fmt.Errorf("range at %d: %d records", base, n)
				}
				if err == nil {
					var rec []byte
					rec, err = s.Vertex(base + 3)
					if errors.Is(err, ErrClosed) {
						return
					}
					if err == nil && string(rec) != fmt.Sprint(base+3) {
						err = fmt.Errorf("vertex %d = %q", base+3, rec)
					}
				}
				if err != nil {
					errc <- err
					return
				}
			}
		}(g)
	}
	for i := 0; i < 20; i++ {
		mustWrite(t, s, &vertex.Batch{Puts: []vertex.Record{{ID: vertex.ID(100000 + i), Rec: []byte("w")}}, Admin: []byte{byte(i)}})
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
}

func TestReadOnly(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s, &vertex.Batch{Puts: []vertex.Record{{ID: 2, Rec: []byte("x")}}, Admin: []byte("a")})
	s.Close()

	o := testOptions()
	o.ReadOnly = true
	r := mustOpen(t, dir, o)
	wantVertex(t, r, 2, "x")
	if err := r.Write(&vertex.Batch{Admin: []byte("b")}); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Write on read-only store: %v", err)
	}
	if err := r.Compact(); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Compact on read-only store: %v", err)
	}
	// A second read-only open is allowed (no lock).
	r2 := mustOpen(t, dir, o)
	wantVertex(t, r2, 2, "x")

	if _, err := Open(filepath.Join(dir, "missing"), o); !errors.Is(err, ErrNoDatabase) {
		t.Fatalf("read-only Open of a missing dir: %v", err)
	}
	if _, err := Open(t.TempDir(), o); !errors.Is(err, ErrNoDatabase) {
		t.Fatalf("read-only Open of an empty dir: %v", err)
	}
}

func TestEmptyRecord(t *testing.T) {
	s := mustOpen(t, t.TempDir(), nil)
	mustWrite(t, s, &vertex.Batch{Puts: []vertex.Record{{ID: 2, Rec: nil}}})
	got, err := s.Vertex(2)
	if err != nil || got == nil || len(got) != 0 {
		t.Fatalf("Vertex of an empty record = %q (nil %v), %v", got, got == nil, err)
	}
	if recs := collect(t, s, 2, 1); len(recs) != 1 || recs[0].rec != "" {
		t.Fatalf("VertexRange of an empty record = %v", recs)
	}
}
