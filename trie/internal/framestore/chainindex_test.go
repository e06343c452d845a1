package framestore

import (
	"testing"

	"github.com/hexstate/hexstate/vertex"
)

// TestChainIndex: every change of a store added is found with its frame's
// seq, a later frame's seq replaces an earlier one's, deletions (nil older
// vertices) are indexed, unset fresh slots are not, and the table grows past
// the size it was made for without losing an entry.
func TestChainIndex(t *testing.T) {
	x := NewChainIndex(16)
	var stores []Store[int]
	for f := 0; f < 20; f++ {
		s := New[int](vertex.ID(1_000_000 * (f + 1)))
		for i := 0; i < 500; i++ {
			s.Set(vertex.ID(1+(f*37+i*13)%3000), new(int)) // older IDs, overlapping between frames
		}
		s.Set(vertex.ID(4000+f), nil) // an older vertex deleted
		s.Set(s.First()+2, new(int))  // fresh; s.First() and s.First()+1 stay unset
		stores = append(stores, s)
		Add(x, &stores[f], uint32(f+1), nil)
	}
	want := map[vertex.ID]uint32{}
	for f := range stores {
		stores[f].Each(func(id vertex.ID, _ *int, _ []byte) { want[id] = uint32(f + 1) })
	}
	if x.Len() != len(want) {
		t.Fatalf("Len = %d, want %d", x.Len(), len(want))
	}
	for id, seq := range want {
		if got, ok := x.Get(id); !ok || got != seq {
			t.Fatalf("Get(%d) = %d, %v; want %d (the newest frame holding it)", id, got, ok, seq)
		}
	}
	for _, id := range []vertex.ID{3001, 3999, 1_000_000, 1_000_001, 99_000_000} {
		if seq, ok := x.Get(id); ok {
			t.Fatalf("Get(%d) = %d, true for an ID no frame holds", id, seq)
		}
	}
	if x.Slots() < 2*x.Len() {
		t.Fatalf("%d IDs in %d slots: more than half full", x.Len(), x.Slots())
	}
}

// TestChainIndexGrowsAhead: the Add after which the next growAheadAdds (as
// large) might not fit the index's load bound starts building the larger
// table, no Add before it; reads beside that build are answered from the current
// table; the next Add puts it in place (twice the slots) with every entry
// kept; Free releases a table still being built.
func TestChainIndexGrowsAhead(t *testing.T) {
	x := NewChainIndex(1000)
	slots := x.Slots()
	per := slots / 32
	next := vertex.ID(1)
	add := func(n int, seq uint32) {
		s := New[int](1 << 40)
		for i := 0; i < n; i++ {
			s.Set(next, new(int))
			next++
		}
		Add(x, &s, seq, nil)
	}
	seq := uint32(0)
	for x.t.next == nil {
		if 2*(x.Len()+growAheadAdds*per) > slots {
			t.Fatalf("no growth started at %d IDs in %d slots, adding %d at a time", x.Len(), slots, per)
		}
		seq++
		add(per, seq)
	}
	if 2*(x.Len()+growAheadAdds*per) <= slots {
		t.Fatalf("a growth started at %d IDs in %d slots, with room for %d more adds of %d", x.Len(), slots, growAheadAdds, per)
	}
	for id := vertex.ID(1); id < next; id++ { // reads beside the build
		want := uint32((int(id)-1)/per + 1)
		if got, ok := x.Get(id); !ok || got != want {
			t.Fatalf("Get(%d) = %d, %v during the growth; want %d", id, got, ok, want)
		}
	}
	add(per, seq+1)
	if x.t.next != nil || x.Slots() != 2*slots {
		t.Fatalf("after the next Add: growth pending %v, %d slots; want none, %d", x.t.next != nil, x.Slots(), 2*slots)
	}
	for id := vertex.ID(1); id < next; id++ {
		if _, ok := x.Get(id); !ok {
			t.Fatalf("ID %d lost in the growth", id)
		}
	}
	add(x.Slots()/2-x.Len(), seq+2) // up to the bound: the next growth under way
	if x.t.next == nil {
		t.Fatal("no second growth started")
	}
	x.Free()
	if x.t.next != nil || x.t.Slots() != 0 {
		t.Fatal("Free left a table or a growth behind")
	}
}
