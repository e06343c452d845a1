package reccache

import (
	"math/rand/v2"
	"testing"

	"github.com/hexstate/hexstate/vertex"
)

// TestIndexAgainstMap runs random sets, conditional and unconditional
// removals and lookups on an index and on a Go map, over few enough IDs that
// probe runs collide, wrap around the table's end and are cut by removals,
// and the table grows; every lookup and the count must agree.
func TestIndexAgainstMap(t *testing.T) {
	for _, ids := range []int{50, 300, 5000} {
		r := rand.New(rand.NewPCG(uint64(ids), 7))
		x := newIndex()
		m := map[vertex.ID]uint64{}
		for op := range 200_000 {
			id := vertex.ID(1 + r.IntN(ids))
			switch r.IntN(4) {
			case 0, 1:
				off := r.Uint64()
				x.set(id, off)
				m[id] = off
			case 2:
				off, ok := m[id]
				if r.IntN(2) == 0 {
					off++ // a replaced entry: must stay
				} else if ok {
					delete(m, id)
				}
				x.remove(id, off, false)
			default:
				x.remove(id, 0, true)
				delete(m, id)
			}
			if op%1000 == 0 || ids == 50 {
				for id := vertex.ID(1); id <= vertex.ID(ids); id++ {
					off, ok := x.get(id)
					want, wok := m[id]
					if ok != wok || off != want {
						t.Fatalf("%d IDs, op %d: id %d: got %d,%v want %d,%v", ids, op, id, off, ok, want, wok)
					}
				}
			}
			if x.n != len(m) {
				t.Fatalf("%d IDs, op %d: %d entries, want %d", ids, op, x.n, len(m))
			}
		}
		if 4*x.n > 3*len(x.slots) {
			t.Fatalf("%d IDs: %d entries in %d slots", ids, x.n, len(x.slots))
		}
	}
}
