package framestore

import "sync"

// ChainPool holds spare indexes for lines of frames. A line's index is sized
// for a whole persist interval of frames (32 MiB of table at 64 blocks of
// 6,000 writes) and is filled with a frame's changes in one block's Begin,
// right after a persist. A table allocated there is memory the process has
// not touched, and the first write to each of its pages is a page fault
// (15–30 µs each on the benchmark VMs: 100–300 ms for that Begin). A spare's
// pages are in memory: it is either a table prepared and prefaulted on a
// goroutine of its own (Prepare, which the trie calls at each persist, a
// block before the index is needed) or the emptied index of a line nothing
// reaches any more (Put, which the trie calls from a runtime.AddCleanup on
// the line: the garbage collector is what proves that no frame and no
// pending write reads it).
//
// A ChainPool is safe for concurrent use.
type ChainPool struct {
	mu    sync.Mutex
	spare []*ChainIndex
	// preparing is closed when the spare Prepare is making is in the pool;
	// nil when none is being made.
	preparing chan struct{}
}

// poolSpares bounds the indexes a pool keeps.
const poolSpares = 2

// Get returns an empty index with room for ids IDs: the smallest spare that
// has room and is at most twice the size of a new one, or a new one. A spare
// Prepare is still making is waited for: its goroutine may have had no core
// while the writer and the blocks had both (its page faults would otherwise
// be taken again, in Get's caller's Begin).
func (p *ChainPool) Get(ids int) *ChainIndex {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.preparing != nil {
		ready := p.preparing
		p.mu.Unlock()
		<-ready
		p.mu.Lock()
	}
	i := p.fitting(ids)
	if i < 0 {
		return NewChainIndex(ids)
	}
	x := p.spare[i]
	p.spare = append(p.spare[:i], p.spare[i+1:]...)
	return x
}

// Put empties x and keeps it for a later Get. The caller must not use x
// afterwards.
func (p *ChainPool) Put(x *ChainIndex) {
	x.reset()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keepLocked(x)
}

// Prepare makes a spare with room for ids IDs and its pages in memory, on a
// goroutine of its own, unless the pool has a spare Get would return for
// them or is making one.
func (p *ChainPool) Prepare(ids int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.preparing != nil || p.fitting(ids) >= 0 {
		return
	}
	ready := make(chan struct{})
	p.preparing = ready
	go func() {
		x := NewChainIndex(ids)
		x.t.Prefault()
		p.mu.Lock()
		defer p.mu.Unlock()
		p.preparing = nil
		p.keepLocked(x)
		close(ready)
	}()
}

// Spares is how many indexes the pool holds.
func (p *ChainPool) Spares() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.spare)
}

// fitting returns the position of the smallest spare with room for ids IDs
// and not too large for them (idtable.Table.Suits), or -1. The caller holds
// p.mu.
func (p *ChainPool) fitting(ids int) int {
	best := -1
	for i, x := range p.spare {
		if x.t.Suits(ids) && (best < 0 || x.Slots() < p.spare[best].Slots()) {
			best = i
		}
	}
	return best
}

// keepLocked keeps x as a spare, in place of the oldest when the pool is
// full (which it frees): the newest spares are sized like the lines of late.
// The caller holds p.mu.
func (p *ChainPool) keepLocked(x *ChainIndex) {
	if len(p.spare) == poolSpares {
		p.spare[0].Free()
		p.spare = append(p.spare[:0], p.spare[1:]...)
	}
	p.spare = append(p.spare, x)
}
