package framestore

import (
	"testing"
	"time"

	"github.com/hexstate/hexstate/internal/manual"
	"github.com/hexstate/hexstate/vertex"
)

// TestChainPool: an index put back comes out of Get empty and with its
// table (no new allocation), Get picks the smallest spare with room and
// makes a new index when none has room or every one with room is over twice
// the size it needs, and a full pool keeps its newest spares.
func TestChainPool(t *testing.T) {
	var p ChainPool
	big := NewChainIndex(100_000)
	s := New[int](1_000_000)
	for i := 1; i <= 5000; i++ {
		s.Set(vertex.ID(i), new(int))
	}
	Add(big, &s, 7, nil)
	slots := big.Slots()
	p.Put(big)
	small := NewChainIndex(1000)
	p.Put(small)
	if p.Spares() != 2 {
		t.Fatalf("Spares = %d after two puts, want 2", p.Spares())
	}
	if got := p.Get(10); got == small || got == big {
		t.Fatalf("Get(10) returned a spare more than twice the size of a new index")
	}
	if got := p.Get(500); got != small {
		t.Fatalf("Get(500) did not return the smallest spare with room")
	}
	got := p.Get(40_000)
	if got != big || got.Slots() != slots {
		t.Fatalf("Get(40000) = %p with %d slots, want the big spare %p with %d", got, got.Slots(), big, slots)
	}
	if got.Len() != 0 {
		t.Fatalf("a spare comes back with %d IDs, want none", got.Len())
	}
	if _, ok := got.Get(17); ok {
		t.Fatalf("a spare comes back holding an ID it held before")
	}
	if fresh := p.Get(10); fresh == big || fresh == small || p.Spares() != 0 {
		t.Fatalf("Get on an empty pool did not make a new index")
	}
	if x := p.Get(1 << 20); x.Slots() < 1<<21 {
		t.Fatalf("Get(1<<20) has %d slots, not room for 1<<20 IDs at half load", x.Slots())
	}
	// A full pool keeps its two newest.
	a, b, c := NewChainIndex(10_000), NewChainIndex(100_000), NewChainIndex(10)
	p.Put(a)
	p.Put(b)
	p.Put(c)
	if p.Spares() != 2 || p.Get(50_000) != b || p.Get(10) != c || p.Spares() != 0 {
		t.Fatalf("a full pool did not keep its two newest spares")
	}
	// The spare a full pool drops has its memory freed at once.
	p.Put(NewChainIndex(10))
	p.Put(NewChainIndex(10))
	before := manual.Mapped()
	dropped := NewChainIndex(1 << 16)
	p.Put(dropped)
	p.Put(NewChainIndex(10))
	p.Put(NewChainIndex(10))
	if got := manual.Mapped(); got > before+2*4096 {
		t.Fatalf("manual memory %d after the pool dropped a %d-slot spare, want at most %d", got, 1<<17, before+2*4096)
	}
}

// TestChainPoolPrepare: Prepare leaves a spare with room for the IDs asked
// for, which Get then returns; a second Prepare while a spare with room is
// there makes none.
func TestChainPoolPrepare(t *testing.T) {
	var p ChainPool
	p.Prepare(50_000)
	deadline := time.Now().Add(10 * time.Second)
	for p.Spares() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("Prepare made no spare within 10 s")
		}
		time.Sleep(time.Millisecond)
	}
	p.Prepare(40_000)
	time.Sleep(20 * time.Millisecond)
	if p.Spares() != 1 {
		t.Fatalf("Spares = %d after a Prepare with a spare of room there, want 1", p.Spares())
	}
	x := p.Get(50_000)
	if p.Spares() != 0 || x.Len() != 0 || x.Slots() < 100_000 {
		t.Fatalf("Get after Prepare: spares %d, %d IDs, %d slots; want the prepared, empty index of ≥ 100,000 slots", p.Spares(), x.Len(), x.Slots())
	}
}

// TestChainPoolGetWaitsForPrepare: a Get right after a Prepare returns the
// spare Prepare makes (waiting for it) rather than a new index, so no spare
// is left over.
func TestChainPoolGetWaitsForPrepare(t *testing.T) {
	var p ChainPool
	p.Prepare(2_000_000) // 64 MiB to fault in: tens of milliseconds
	x := p.Get(2_000_000)
	if x.Slots() < 4_000_000 || x.Len() != 0 {
		t.Fatalf("Get returned %d slots, %d IDs; want an empty index of ≥ 4,000,000 slots", x.Slots(), x.Len())
	}
	time.Sleep(500 * time.Millisecond) // a Prepare left running would add its spare by now
	if n := p.Spares(); n != 0 {
		t.Fatalf("Spares = %d after Get: Get made a new index beside the prepared one", n)
	}
	x.Free()
}
