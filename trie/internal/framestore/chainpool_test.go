package framestore

import (
	"testing"
	"time"

	"github.com/hexstate/hexstate/internal/manual"
)

// TestChainPool: Get returns a spare that has room and is at most twice the
// size a new index would be, else makes a new one; the pool keeps one
// spare, the newest, and frees the one it drops at once.
func TestChainPool(t *testing.T) {
	var p ChainPool
	keep := func(x *ChainIndex) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.keepLocked(x)
	}
	big := NewChainIndex(100_000)
	keep(big)
	if got := p.Get(10); got == big || p.Spares() != 1 {
		t.Fatalf("Get(10) returned a spare more than twice the size of a new index")
	}
	if got := p.Get(200_000); got == big || p.Spares() != 1 {
		t.Fatalf("Get(200000) returned a spare without room for it")
	}
	if got := p.Get(40_000); got != big || got.Len() != 0 || p.Spares() != 0 {
		t.Fatalf("Get(40000) did not return the spare with room")
	}
	if x := p.Get(1 << 20); x.Slots() < 1<<21 {
		t.Fatalf("Get(1<<20) has %d slots, not room for 1<<20 IDs at half load", x.Slots())
	}
	// A full pool keeps the newest, and the spare it drops has its memory
	// freed at once.
	keep(NewChainIndex(10))
	before := manual.Mapped()
	keep(NewChainIndex(1 << 16))
	newest := NewChainIndex(10)
	keep(newest)
	if p.Spares() != 1 || p.Get(10) != newest {
		t.Fatalf("a full pool did not keep its newest spare")
	}
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
