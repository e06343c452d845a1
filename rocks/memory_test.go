package rocks

import (
	"errors"
	"testing"

	"github.com/hexstate/hexstate/vertex"
)

// TestMemoryUsage: a store's block cache and memtables are reported once it
// has read and written, and a closed store reports ErrClosed.
func TestMemoryUsage(t *testing.T) {
	s, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	b := &vertex.Batch{}
	for i := 1; i <= 1000; i++ {
		b.Puts = append(b.Puts, vertex.Record{ID: vertex.ID(i), Rec: make([]byte, 100)})
	}
	if err := s.Write(b); err != nil {
		t.Fatal(err)
	}
	m, err := s.MemoryUsage()
	if err != nil {
		t.Fatal(err)
	}
	if m.Memtables == 0 || m.Total() < m.Memtables {
		t.Fatalf("after writing 100 KB: %+v", m)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MemoryUsage(); !errors.Is(err, ErrClosed) {
		t.Fatalf("MemoryUsage after Close: %v, want ErrClosed", err)
	}
}
