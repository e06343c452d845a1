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
	spare *ChainIndex // the index Prepare made last, if Get has not taken it
	// preparing is closed when the spare Prepare is making is in the pool;
	// nil when none is being made.
	preparing chan struct{}
}

// Get returns an empty index with room for ids IDs: the spare, if it has
// room and is at most twice the size of a new one, or a new one. A spare
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
	if !p.fits(ids) {
		return NewChainIndex(ids)
	}
	x := p.spare
	p.spare = nil
	return x
}

// Prepare makes a spare with room for ids IDs and its pages in memory, on a
// goroutine of its own, unless the pool has a spare Get would return for
// them or is making one.
func (p *ChainPool) Prepare(ids int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.preparing != nil || p.fits(ids) {
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

// Spares is how many indexes the pool holds: 0 or 1.
func (p *ChainPool) Spares() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.spare == nil {
		return 0
	}
	return 1
}

// fits reports whether the pool has a spare with room for ids IDs and not
// too large for them (idtable.Table.Suits). The caller holds p.mu.
func (p *ChainPool) fits(ids int) bool { return p.spare != nil && p.spare.t.Suits(ids) }

// keepLocked keeps x as the spare, in place of the one the pool held (which
// it frees): the newest spare is sized like the lines of late. The caller
// holds p.mu.
func (p *ChainPool) keepLocked(x *ChainIndex) {
	if p.spare != nil {
		p.spare.Free()
	}
	p.spare = x
}
