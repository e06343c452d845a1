package rocks

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand"
	"path/filepath"
	"testing"

	"github.com/hexstate/hexstate/vertex"
)

// readAll returns what read hands over for [first, first+n), as "id=rec;".
func readAll(t *testing.T, read func(vertex.ID, int, func(vertex.ID, []byte) error) error, first vertex.ID, n int) string {
	t.Helper()
	var b bytes.Buffer
	if err := read(first, n, func(id vertex.ID, rec []byte) error {
		fmt.Fprintf(&b, "%d=%x;", id, crc32.ChecksumIEEE(rec))
		return nil
	}); err != nil {
		t.Fatalf("range [%d, +%d): %v", first, n, err)
	}
	return b.String()
}

// TestCursorMatchesVertexRange reads random ranges, mostly forward as a walk
// does but also backward, overlapping, past the end, of single records and
// around records larger than the cursor's buffer, with a Cursor and with
// Store.VertexRange, and finds the same records.
func TestCursorMatchesVertexRange(t *testing.T) {
	s := mustOpen(t, filepath.Join(t.TempDir(), "s"), nil)
	rng := rand.New(rand.NewSource(1))
	var b vertex.Batch
	for id := vertex.ID(1); id < 20000; id += vertex.ID(1 + rng.Intn(4)) {
		rec := make([]byte, 1+rng.Intn(40))
		if id%997 == 0 {
			rec = make([]byte, 64<<10+rng.Intn(3<<16)) // larger than the buffer
		}
		rng.Read(rec)
		b.Puts = append(b.Puts, vertex.Record{ID: id, Rec: rec})
	}
	b.Puts = append(b.Puts, vertex.Record{ID: math.MaxUint64, Rec: []byte("max")})
	mustWrite(t, s, &b)
	c, err := s.NewCursor()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pos := vertex.ID(1)
	for i := 0; i < 3000; i++ {
		first, n := pos+vertex.ID(rng.Intn(40)), 1+rng.Intn(30)
		switch rng.Intn(10) {
		case 0:
			first = vertex.ID(rng.Intn(21000)) // anywhere, backward included
		case 1:
			n = 1
		case 2:
			if rng.Intn(20) == 0 {
				n = 1 << 40 // to the end
			}
		case 3:
			first, n = math.MaxUint64-vertex.ID(rng.Intn(3)), 5 // clamped at the largest ID
		}
		got, want := readAll(t, c.VertexRange, first, n), readAll(t, s.VertexRange, first, n)
		if got != want {
			t.Fatalf("read %d: range [%d, +%d): cursor %.200s, want %.200s", i, first, n, got, want)
		}
		pos = first
	}
	if got := readAll(t, c.VertexRange, 5, 0); got != "" {
		t.Fatalf("empty range: %q", got)
	}
	stop := errors.New("stop")
	calls := 0
	if err := c.VertexRange(1, 100, func(vertex.ID, []byte) error { calls++; return stop }); err != stop || calls != 1 {
		t.Fatalf("fn's error: %v after %d calls, want it after 1", err, calls)
	}
}

// TestCursorClose: a closed cursor (or one of a closed store) reads nothing
// and says so; Close twice, and after the store's Close, is harmless.
func TestCursorClose(t *testing.T) {
	s := mustOpen(t, filepath.Join(t.TempDir(), "s"), nil)
	mustWrite(t, s, &vertex.Batch{Puts: []vertex.Record{{ID: 1, Rec: []byte("a")}}})
	c, err := s.NewCursor()
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	c.Close()
	if err := c.VertexRange(1, 1, func(vertex.ID, []byte) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Fatalf("read after Close: %v, want ErrClosed", err)
	}
	c, err = s.NewCursor()
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, c.VertexRange, 1, 1); got != fmt.Sprintf("1=%x;", crc32.ChecksumIEEE([]byte("a"))) {
		t.Fatalf("read %q", got)
	}
	c.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.NewCursor(); !errors.Is(err, ErrClosed) {
		t.Fatalf("NewCursor after the store's Close: %v, want ErrClosed", err)
	}
}
