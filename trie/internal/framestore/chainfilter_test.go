package framestore

import (
	"testing"

	"github.com/hexstate/hexstate/vertex"
)

// TestChainFilter: every older ID added is held, fresh IDs are not added, a
// filter refuses a store it has no room for (adding nothing), and the false
// positive rate at capacity stays near a 16-bit, two-probe filter's.
func TestChainFilter(t *testing.T) {
	s := New[int](1 << 40)
	for id := vertex.ID(1); id <= 4000; id++ {
		s.Set(id*7, new(int))
	}
	s.Set(1<<40+3, new(int)) // fresh: not an older ID
	f := NewChainFilter(4000)
	if !AddOlder(f, &s) {
		t.Fatal("a filter sized for the store refused it")
	}
	for id := vertex.ID(1); id <= 4000; id++ {
		if !f.MayHold(id * 7) {
			t.Fatalf("ID %d added but not held", id*7)
		}
	}
	fp := 0
	for id := vertex.ID(1); id <= 100_000; id++ {
		if id%7 != 0 && f.MayHold(id) {
			fp++
		}
	}
	if rate := float64(fp) / 100_000; rate > 0.03 {
		t.Errorf("false positive rate %.3f at capacity (a 16-bit two-probe filter: ~0.013)", rate)
	}
	if f.MayHold(1<<40 + 3) {
		t.Log("fresh ID held (a false positive)")
	}
	full := f.added.Load()
	if AddOlder(f, &s) {
		t.Fatal("a full filter took another store")
	}
	if f.added.Load() != full {
		t.Fatal("a refused store changed the count")
	}
	var nilFilter *ChainFilter
	if nilFilter.MayHold(7) {
		t.Fatal("a nil filter holds an ID")
	}
}
