package rocks

import (
	"sync"

	"github.com/linxGnu/grocksdb"
)

// A rangeReader is the per-call state of VertexRange: read options whose
// iterate-upper-bound points at upper, the seek key, and iterators kept open
// across calls. Creating a RocksDB iterator (pinning a super-version, building
// the merging iterator over memtables and levels) costs more than the seek and
// the 16 records a branch's range read returns, so readers are pooled and their
// iterators re-seeked. An iterator sees the store as of its creation: the pool
// drops every iterator created before the last Write or Compact (see gen).
type rangeReader struct {
	bounded   *grocksdb.ReadOptions // iterate_upper_bound = upper
	unbounded *grocksdb.ReadOptions // no bound, for ranges ending at the max ID
	lower     []byte
	upper     []byte
	buf       []byte // scratch of scanRange

	gen      uint64             // the pool generation its iterators belong to
	itB, itU *grocksdb.Iterator // over bounded / unbounded; nil until needed
	db       *grocksdb.DB
	cf       *grocksdb.ColumnFamilyHandle
}

// iterator returns the reader's iterator for a bounded or unbounded range,
// creating it on first use. RocksDB reads the upper bound through a pointer on
// every seek, so rewriting upper in place moves the bound of an open iterator.
func (r *rangeReader) iterator(bounded bool) *grocksdb.Iterator {
	if bounded {
		if r.itB == nil {
			r.itB = r.db.NewIteratorCF(r.bounded, r.cf)
		}
		return r.itB
	}
	if r.unbounded == nil {
		r.unbounded = grocksdb.NewDefaultReadOptions()
	}
	if r.itU == nil {
		r.itU = r.db.NewIteratorCF(r.unbounded, r.cf)
	}
	return r.itU
}

// closeIterators closes the reader's iterators, keeping its options.
func (r *rangeReader) closeIterators() {
	if r.itB != nil {
		r.itB.Close()
		r.itB = nil
	}
	if r.itU != nil {
		r.itU.Close()
		r.itU = nil
	}
}

func (r *rangeReader) destroy() {
	r.closeIterators()
	r.bounded.Destroy()
	if r.unbounded != nil {
		r.unbounded.Destroy()
	}
}

// rangePool is a free list of rangeReaders (a sync.Pool would drop them
// without freeing their native objects). gen counts the store's writes: a
// reader whose iterators predate the current generation has them closed before
// reuse, and invalidate closes the idle ones at once, so that no iterator
// serves a record older than the last Write and none pins memtables or SST
// files a flush or compaction has retired.
type rangePool struct {
	mu   sync.Mutex
	free []*rangeReader
	gen  uint64
	db   *grocksdb.DB
	cf   *grocksdb.ColumnFamilyHandle
}

const maxPooledRanges = 64

func (p *rangePool) get() *rangeReader {
	p.mu.Lock()
	gen := p.gen
	if n := len(p.free); n > 0 {
		r := p.free[n-1]
		p.free = p.free[:n-1]
		p.mu.Unlock()
		if r.gen != gen {
			r.closeIterators()
			r.gen = gen
		}
		return r
	}
	p.mu.Unlock()
	r := &rangeReader{lower: make([]byte, 8), upper: make([]byte, 8), gen: gen, db: p.db, cf: p.cf}
	r.bounded = grocksdb.NewDefaultReadOptions()
	// RocksDB keeps a pointer to upper (Go heap memory, which does not move);
	// r keeps it alive.
	r.bounded.SetIterateUpperBound(r.upper)
	return r
}

func (p *rangePool) put(r *rangeReader) {
	p.mu.Lock()
	if r.gen != p.gen {
		r.closeIterators()
		r.gen = p.gen
	}
	if len(p.free) < maxPooledRanges {
		p.free = append(p.free, r)
		r = nil
	}
	p.mu.Unlock()
	if r != nil {
		r.destroy()
	}
}

// invalidate starts a new generation: readers in use close their iterators
// when they are next taken, idle ones close them now. Call it after every
// change to the store's contents or files, before the change is reported done.
func (p *rangePool) invalidate() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gen++
	for _, r := range p.free {
		r.closeIterators()
		r.gen = p.gen
	}
}

func (p *rangePool) destroy() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.free {
		r.destroy()
	}
	p.free = nil
}
