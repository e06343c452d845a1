package framestore

import "sync"

// ChainPool makes a line of frames' index ahead of need. A line's index is
// filled with a frame's changes in one block's Begin, right after a persist,
// and the first write to each page of a table the process has not touched is
// a page fault (in 4 KiB pages 15–30 µs each on the benchmark VMs: 100–300 ms
// for that Begin; tables from internal/manual now take transparent huge
// pages, 2 MiB per fault). Prepare, which the trie calls at each persist, a
// block before the index is needed, makes the table and writes each of its
// pages on a goroutine of its own; Get hands it over.
//
// It used to keep the emptied indexes of lines nothing reached any more,
// too, for later lines: resident tables of a whole line's size, one of them
// idle between persists and at the persist's peak (docs/benchmarks.md
// §10.9). A line's index is now freed with the line.
//
// A ChainPool is safe for concurrent use.
type ChainPool struct {
	mu    sync.Mutex
	spare []*ChainIndex
	// preparing is closed when the spare Prepare is making is in the pool;
	// nil when none is being made.
	preparing chan struct{}
}

// poolSpares bounds the indexes a pool keeps: the one Prepare made last.
const poolSpares = 1

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
// full (which it frees): the newest spare is sized like the lines of late.
// The caller holds p.mu.
func (p *ChainPool) keepLocked(x *ChainIndex) {
	if len(p.spare) == poolSpares {
		p.spare[0].Free()
		p.spare = append(p.spare[:0], p.spare[1:]...)
	}
	p.spare = append(p.spare, x)
}
