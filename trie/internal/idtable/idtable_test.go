package idtable

import (
	"math/rand/v2"
	"testing"

	"github.com/hexstate/hexstate/internal/manual"
	"github.com/hexstate/hexstate/vertex"
)

// TestAgainstMap runs random sets, conditional and unconditional removals
// and lookups on a table and on a Go map, over few enough IDs that probe runs
// collide, wrap around the table's end and are cut by removals, and the table
// grows; every lookup and the count must agree, at each load bound.
func TestAgainstMap(t *testing.T) {
	x := New[uint64](0, 3)
	x.Set(vertex.NoID, 1)
	x.Remove(vertex.NoID)
	if _, ok := x.Get(vertex.NoID); ok || x.Len() != 0 || x.Find(vertex.NoID) != -1 {
		t.Fatalf("vertex.NoID found, or counted (%d entries)", x.Len())
	}
	for _, c := range []struct{ ids, quarters int }{{50, 3}, {300, 3}, {5000, 3}, {50, 2}, {5000, 2}} {
		ids := c.ids
		r := rand.New(rand.NewPCG(uint64(ids), uint64(c.quarters)))
		x := New[uint64](0, c.quarters)
		m := map[vertex.ID]uint64{}
		for op := range 200_000 {
			id := vertex.ID(1 + r.IntN(ids))
			switch r.IntN(4) {
			case 0, 1:
				off := r.Uint64()
				x.Set(id, off)
				m[id] = off
			case 2:
				off, ok := m[id]
				if r.IntN(2) == 0 {
					off++ // a replaced entry: must stay
				} else if ok {
					delete(m, id)
				}
				if i := x.Find(id); i >= 0 && x.At(i) == off {
					x.RemoveAt(i)
				}
			default:
				x.Remove(id)
				delete(m, id)
			}
			if op%1000 == 0 || ids == 50 {
				for id := vertex.ID(1); id <= vertex.ID(ids); id++ {
					off, ok := x.Get(id)
					want, wok := m[id]
					if ok != wok || off != want {
						t.Fatalf("%d IDs, op %d: id %d: got %d,%v want %d,%v", ids, op, id, off, ok, want, wok)
					}
				}
			}
			if x.Len() != len(m) {
				t.Fatalf("%d IDs, op %d: %d entries, want %d", ids, op, x.Len(), len(m))
			}
			if 4*x.Len() > c.quarters*x.Slots() {
				t.Fatalf("%d IDs, op %d: %d entries in %d slots", ids, op, x.Len(), x.Slots())
			}
		}
	}
}

// TestManual: a table from NewManual holds what a table from New holds as
// it grows past its first size, its slots are mapped outside the Go heap
// (manual.Mapped counts them) and Free returns them, twice without harm.
func TestManual(t *testing.T) {
	before := manual.Mapped()
	tb := NewManual[uint64](10, 2)
	for id := vertex.ID(1); id <= 5000; id++ {
		tb.Set(id, uint64(id)*3)
	}
	for id := vertex.ID(1); id <= 5000; id++ {
		if v, ok := tb.Get(id); !ok || v != uint64(id)*3 {
			t.Fatalf("Get(%d) = %d, %v; want %d", id, v, ok, uint64(id)*3)
		}
	}
	if got := manual.Mapped() - before; got < int64(tb.Bytes()) {
		t.Fatalf("manual memory grew by %d bytes for a table of %d", got, tb.Bytes())
	}
	tb.Free()
	tb.Free()
	if got := manual.Mapped(); got != before {
		t.Fatalf("manual memory %d after Free, want %d", got, before)
	}
}
