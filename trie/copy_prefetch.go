package trie

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/hexstate/hexstate/vertex"
)

// The copy's read-ahead.
//
// A copy's walk is serial: the IDs it gives follow the builder's order, so
// it visits the source's vertices one after the other, in key order. Most
// of its time is reading the source (a seek per scattered cluster of
// children, in cgo), which does not depend on anything the walk decides. So
// worker goroutines read ahead of it: the account trie is cut at a depth
// (copyPrefetch.depth) into sub-tries, and each worker takes the next
// sub-trie in key order and reads it, in the walk's own order, into a
// stream of records (copyStream): for each branch its children's records in
// slot order, for each account with storage its storage trie's root, then
// what lies below each, depth first. When the walk reaches the top of a
// sub-trie it takes the sub-trie's stream and reads its records from it
// instead of from the source. The workers read in parallel, each through a
// source cursor pool of its own; the walk itself only decodes and encodes.
//
// The streams are a cache of the walk's next reads, never trusted: the walk
// checks the ID of every record it takes, and when a stream ends early or
// hands another ID (a worker's read failed, the source does not fit its
// trie, a resumed walk skipped part of the sub-trie) it drops the stream and
// reads the rest of that sub-trie from the source itself, where an error
// is reported as without a read-ahead. What a copy writes never depends on
// the workers.
//
// Memory is bounded: a stream holds at most copyStreamChunks chunks of
// about copyChunkBytes, and the workers claim a sub-trie only when the order
// channel (the streams in key order, at most copyStreamsAhead of them) has
// room. Deadlock cannot occur: the walk drains the streams in the order the
// workers claimed them, a worker fills one stream at a time and claims the
// next only after its last one is complete, so the stream the walk waits on
// is always being filled by a worker that waits on nothing but the walk.

// copyPrefetch is the read-ahead of one copy: its workers and the walk's
// side of their streams.
type copyPrefetch struct {
	depth int              // the account-trie depth of the sub-tries' tops
	order chan *copyStream // the streams, in key order of their sub-tries
	quit  chan struct{}    // closed by stop
	free  chan *copyChunk  // chunks the walk is done with
	wg    sync.WaitGroup

	mu   sync.Mutex // the enumeration, and sending on order
	enum subtrieEnum
	over bool // the enumeration ended: order is closed

	// The workers' range scans (copy_table.go): records scanned and used
	// over all tables so far, and whether the workers stopped scanning.
	scanned, scanUsed atomic.Int64
	scanOff           atomic.Bool

	pending *copyStream // the walk's: the next stream, not yet its sub-trie's turn
}

// Read-ahead limits: the chunks of a stream, how many a stream may hold
// before its worker waits for the walk, and how many claimed streams may
// wait for the walk.
const (
	copyChunkBytes   = 32 << 10
	copyStreamChunks = 32
	copyStreamsAhead = 8
	// copySubtrieIDs is about how many source IDs a sub-trie should span
	// (the depth is chosen from the source's allocator top): small enough
	// that a whole sub-trie usually fits its stream, so that a worker can
	// read a whole sub-trie ahead of the walk.
	copySubtrieIDs = 4096
	copyMaxDepth   = 6
)

// copyStream is the records a worker read ahead for one sub-trie.
type copyStream struct {
	root   vertex.ID       // the source ID of the sub-trie's top vertex
	chunks chan *copyChunk // closed by the worker when the sub-trie is read or it stops
	done   chan struct{}   // closed by the walk when it takes no more
	cur    *copyChunk      // the walk's: the chunk it reads
	pos    int             // the next record of cur
}

// copyChunk is a run of records: record i is ids[i], buf[ends[i-1]:ends[i]].
type copyChunk struct {
	ids  []vertex.ID
	ends []int
	buf  []byte
}

// copyDepth is the account-trie depth at which a source whose allocator is
// at top is cut into sub-tries of about copySubtrieIDs IDs.
func copyDepth(top vertex.ID) int {
	d := 1
	for n := uint64(top) >> 4; n > copySubtrieIDs && d < copyMaxDepth; n >>= 4 {
		d++
	}
	return d
}

// startPrefetch starts the read-ahead of a copy of src (allocator top top)
// with workers goroutines, skipping the sub-tries a resumed walk has done
// (frames: the resume state's open branches).
func startPrefetch(src Backend, format vertex.Format, top vertex.ID, workers int, frames []copyFrame) *copyPrefetch {
	p := &copyPrefetch{
		depth: copyDepth(top),
		order: make(chan *copyStream, copyStreamsAhead),
		quit:  make(chan struct{}),
		free:  make(chan *copyChunk, (workers+copyStreamsAhead+1)*copyStreamChunks),
	}
	p.enum = subtrieEnum{src: newCopySource(src, true), depth: p.depth, v1: format == vertex.FormatV1}
	for i := range frames {
		if i < p.depth {
			p.enum.skip = append(p.enum.skip, frames[i].nib)
		}
	}
	for range workers {
		p.wg.Add(1)
		go p.work(newCopySource(src, true))
	}
	return p
}

// copyWorkers is how many goroutines read ahead of a copy's walk.
func copyWorkers() int { return max(1, runtime.GOMAXPROCS(0)) }

// stop ends the workers and waits for them.
func (p *copyPrefetch) stop() {
	close(p.quit)
	p.wg.Wait()
	p.enum.src.cursors.close()
}

// streamFor returns the stream of the sub-trie whose top is source vertex
// id, or nil when there is none (the workers are behind or done, or read
// another sub-trie: the walk then reads the sub-trie from the source).
func (p *copyPrefetch) streamFor(id vertex.ID) *copyStream {
	if p.pending == nil {
		p.pending = <-p.order // nil once the enumeration is over
		if p.pending == nil {
			return nil
		}
	}
	if p.pending.root != id {
		return nil
	}
	s := p.pending
	p.pending = nil
	return s
}

// next returns the stream's next record (valid until the next call), or
// false when the stream has ended.
func (s *copyStream) next(p *copyPrefetch) (vertex.ID, []byte, bool) {
	for s.cur == nil || s.pos == len(s.cur.ids) {
		if s.cur != nil {
			p.recycle(s.cur)
		}
		ch, ok := <-s.chunks
		if !ok {
			s.cur = nil
			return 0, nil, false
		}
		s.cur, s.pos = ch, 0
	}
	ch, i := s.cur, s.pos
	s.pos++
	start := 0
	if i > 0 {
		start = ch.ends[i-1]
	}
	return ch.ids[i], ch.buf[start:ch.ends[i]:ch.ends[i]], true
}

// kids fills L with the records of v's children (v is &L.v) from the
// stream, as copySource.readKids does from the source; false when the
// stream does not hold them next.
func (s *copyStream) kids(p *copyPrefetch, L *copyLevel, v *vertex.Vertex) bool {
	L.buf, L.got = L.buf[:0], 0
	for n := 0; n < 16; n++ {
		if v.Used&(1<<n) == 0 {
			continue
		}
		want := v.Base + vertex.ID(n)
		if v.Kids != nil {
			want = v.Kids[n]
		}
		id, rec, ok := s.next(p)
		if !ok || id != want {
			return false
		}
		L.put(n, id, rec)
	}
	L.sliceRecs()
	return true
}

// release tells the worker the walk takes nothing more from s.
func (s *copyStream) release(p *copyPrefetch) {
	close(s.done)
	if s.cur != nil {
		p.recycle(s.cur)
		s.cur = nil
	}
}

func (p *copyPrefetch) recycle(ch *copyChunk) {
	ch.ids, ch.ends, ch.buf = ch.ids[:0], ch.ends[:0], ch.buf[:0]
	select {
	case p.free <- ch:
	default:
	}
}

// work is a worker: it claims the next sub-trie and reads it into a stream,
// until the enumeration is over or stop is called.
func (p *copyPrefetch) work(src copySource) {
	defer p.wg.Done()
	w := prefetchWorker{p: p, src: src}
	defer w.src.cursors.close()
	for {
		s, top := p.claim()
		if s == nil {
			return
		}
		w.s, w.ch = s, nil
		w.walk(0, s.root, top.rec, top.lo)
		w.dropTable()
		if w.ch != nil && len(w.ch.ids) > 0 {
			w.send()
		}
		close(s.chunks)
	}
}

// claim takes the next sub-trie and hands its stream to the walk; nil when
// there is none left or stop was called.
func (p *copyPrefetch) claim() (*copyStream, *subtrieTop) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.over {
		return nil, nil
	}
	top := p.enum.next()
	if top == nil {
		p.over = true
		close(p.order)
		return nil, nil
	}
	s := &copyStream{root: top.id, chunks: make(chan *copyChunk, copyStreamChunks), done: make(chan struct{})}
	select {
	case p.order <- s:
		return s, top
	case <-p.quit:
		return nil, nil
	}
}

// noteScan adds a table's records scanned and used to the totals, and stops
// the scans once most scanned records went unused (a source whose sub-tries
// are not laid out in intervals of their own).
func (p *copyPrefetch) noteScan(scanned, used int) {
	n, u := p.scanned.Add(int64(scanned)), p.scanUsed.Add(int64(used))
	if n >= copyTableIDs && 2*u < n {
		p.scanOff.Store(true)
	}
}

// prefetchWorker is a worker's state: its source, its scratch per depth, the
// stream it fills and the chunk it adds to.
type prefetchWorker struct {
	p      *copyPrefetch
	src    copySource
	levels copyLevels
	tbl    rangeTable
	s      *copyStream
	ch     *copyChunk
}

// cover gives the worker a table of the interval [lo, hi] (copy_table.go)
// when its current table does not cover it, the interval is known (lo not
// 0) and of a sane size, and the scans pay. The walk calls it for every
// vertex it reads below, so that a sub-trie too large for one table (an
// account with a large storage trie) is scanned piece by piece, one table
// per child sub-trie that fits.
func (w *prefetchWorker) cover(lo, hi vertex.ID) {
	if lo == 0 || hi < lo || hi-lo >= copyTableIDs || hi-lo+1 < copyTableMinIDs || w.p.scanOff.Load() {
		return
	}
	if t := w.src.table; t != nil && t.covers(lo, int(hi-lo)+1) {
		return
	}
	w.dropTable()
	if _, err := w.tbl.load(&w.src, lo, hi, copyTableBytes); err == nil {
		w.src.table = &w.tbl
	}
}

// dropTable ends the worker's current table, if any, adding what it
// scanned and handed out to the totals.
func (w *prefetchWorker) dropTable() {
	if t := w.src.table; t != nil {
		w.src.table = nil
		w.p.noteScan(len(t.ends), t.used)
	}
}

// walk reads what the copy's walk reads below the vertex id (record rec) at
// depth d of the sub-trie, in the same order, into the stream; false when
// it stopped (a read failed, the walk or stop released the stream). lo is
// the first ID of the interval the builder gave the vertex's sub-trie (0
// when unknown); next is the first ID after it.
func (w *prefetchWorker) walk(d int, id vertex.ID, rec []byte, lo vertex.ID) (next vertex.ID, ok bool) {
	if len(rec) == 0 {
		return 0, false
	}
	L := w.levels.at(d)
	v1 := w.p.enum.v1
	if rec[0]&3 == 1 { // a leaf: its storage trie, if any
		if !leafHasStorage(rec) { // not decoded: lastGiven without the record
			if v1 {
				return id + 1, true
			}
			return lo, true // in v2 a slot of its parent's
		}
		L.v, L.acc = vertex.Vertex{}, vertex.Account{}
		if vertex.DecodeInto(&L.v, &L.acc, rec) != nil {
			return 0, false
		}
		sid := L.acc.Storage
		end := lastGiven(v1, id, &L.v)
		w.cover(lo, end)
		srec, found, err := w.src.srcVertex(sid, L.buf[:0])
		L.buf = srec
		if err != nil || !found || !w.add(sid, srec) {
			return 0, false
		}
		if _, ok := w.walk(d+1, sid, srec, lo); !ok {
			return 0, false
		}
		return end + 1, true
	}
	L.v, L.acc = vertex.Vertex{}, vertex.Account{}
	if vertex.DecodeInto(&L.v, &L.acc, rec) != nil {
		return 0, false
	}
	end := lastGiven(v1, id, &L.v)
	w.cover(lo, end)
	if w.src.readKids(L, id, &L.v) != nil {
		return 0, false
	}
	for n := 0; n < 16; n++ {
		if L.got&(1<<n) != 0 && !w.add(L.ids[n], L.recs[n]) {
			return 0, false
		}
	}
	at := lo
	for n := 0; n < 16; n++ {
		if L.got&(1<<n) != 0 {
			if at, ok = w.walk(d+1, L.ids[n], L.recs[n], at); !ok {
				return 0, false
			}
		}
	}
	return end + 1, true
}

// add appends a record to the stream, sending the chunk when it is full;
// false when the stream was released or stop called.
func (w *prefetchWorker) add(id vertex.ID, rec []byte) bool {
	if w.ch == nil {
		select {
		case w.ch = <-w.p.free:
		default:
			w.ch = &copyChunk{buf: make([]byte, 0, copyChunkBytes+copyChunkBytes/4)}
		}
	}
	ch := w.ch
	ch.buf = append(ch.buf, rec...)
	ch.ids, ch.ends = append(ch.ids, id), append(ch.ends, len(ch.buf))
	if len(ch.buf) < copyChunkBytes {
		return true
	}
	return w.send()
}

// send hands the chunk being filled to the walk.
func (w *prefetchWorker) send() bool {
	select {
	case w.s.chunks <- w.ch:
		w.ch = nil
		return true
	case <-w.s.done:
	case <-w.p.quit:
	}
	return false
}

// subtrieEnum lists the vertices at a depth of the account trie in key
// order (the tops of the read-ahead's sub-tries), skipping those before a
// resumed walk's position.
type subtrieEnum struct {
	src    copySource
	depth  int
	skip   []int // the resume state's child nibbles, from the root down
	levels copyLevels
	open   []enumFrame // the branches above depth, root first
	begun  bool
	probe  []byte // groupLast's scratch
	// The builder hands out IDs in the order it finishes vertices, so that
	// a sub-trie's interval begins after the one before it (prevEnd) and
	// ends at the last ID given in it (lastID).
	v1      bool
	prevEnd vertex.ID
}

type enumFrame struct {
	L   *copyLevel
	nib int // the child last visited
}

// subtrieTop is a sub-trie the enumeration found: its top's source ID and
// record, and the interval its IDs are guessed to lie in (0 when unknown;
// see copy_table.go).
type subtrieTop struct {
	id  vertex.ID
	rec []byte
	lo  vertex.ID // the first ID of its interval, 0 when unknown
	end vertex.ID // the last ID a builder gives in it (lastID)
}

// next returns the next top vertex, or nil when there is none left or a
// read failed (the copy's walk then meets the failure itself).
func (e *subtrieEnum) next() *subtrieTop {
	if !e.begun {
		e.begun = true
		L := e.levels.at(0)
		rec, found, err := e.src.srcVertex(vertex.RootID, L.out[:0])
		L.out = rec
		if err != nil || !found || !e.push(0, vertex.RootID, rec) {
			return nil
		}
	}
	for len(e.open) > 0 {
		f := &e.open[len(e.open)-1]
		f.nib++
		for f.nib < 16 && f.L.got&(1<<f.nib) == 0 {
			f.nib++
		}
		if f.nib == 16 {
			e.open = e.open[:len(e.open)-1]
			continue
		}
		d := len(e.open) // the child's depth
		if e.skipped(d) {
			continue
		}
		id, rec := f.L.ids[f.nib], f.L.recs[f.nib]
		if d == e.depth {
			t := &subtrieTop{id: id, rec: append([]byte(nil), rec...), end: e.lastID(id, rec)}
			if t.end != 0 {
				if e.prevEnd != 0 && t.end > e.prevEnd {
					t.lo = e.prevEnd + 1
				}
				e.prevEnd = t.end
			}
			return t
		}
		if len(rec) > 0 && rec[0]&3 == 1 {
			continue // a leaf above the depth: the walk copies it itself
		}
		if !e.push(d, id, rec) {
			return nil
		}
	}
	return nil
}

// lastID is the last ID a builder gives in the sub-trie of the vertex id
// with record rec (lastGiven); 0 for a record that does not decode.
func (e *subtrieEnum) lastID(id vertex.ID, rec []byte) vertex.ID {
	if e.v1 {
		return id // no need to decode
	}
	var v vertex.Vertex
	var acc vertex.Account
	if vertex.DecodeInto(&v, &acc, rec) != nil {
		return 0
	}
	return lastGiven(e.v1, id, &v)
}

// lastGiven is the last ID a builder gives in the sub-trie of vertex id,
// v decoded: in format v1 the vertex's own (it is finished last); in v2 a
// branch's last slot, or an account's storage trie's top; 0 for a v2 leaf
// without storage (its ID is its parent's slot).
func lastGiven(v1 bool, id vertex.ID, v *vertex.Vertex) vertex.ID {
	switch {
	case v1:
		return id
	case v.Kind == vertex.Branch:
		return v.Base + vertex.BranchSlots - 1
	case v.Acc != nil && v.Acc.Storage != vertex.NoID:
		return v.Acc.Storage
	}
	return 0
}

// push opens branch id (record rec) at depth d, reading its children.
func (e *subtrieEnum) push(d int, id vertex.ID, rec []byte) bool {
	if len(rec) == 0 || rec[0]&3 == 1 {
		return false
	}
	L := e.levels.at(d)
	L.v, L.acc = vertex.Vertex{}, vertex.Account{}
	if vertex.DecodeInto(&L.v, &L.acc, rec) != nil || e.src.readKids(L, id, &L.v) != nil {
		return false
	}
	e.open = append(e.open, enumFrame{L: L, nib: -1})
	return true
}

// skipped reports whether the child at depth d the open frames lead to lies
// before a resumed walk's position, or is the sub-trie it resumes in (which
// the walk copies from the source itself): its path of nibbles, up to the
// resume state's depth, is not after the state's.
func (e *subtrieEnum) skipped(d int) bool {
	m := min(d, len(e.skip))
	for i := 0; i < m; i++ {
		if a, b := e.open[i].nib, e.skip[i]; a != b {
			return a < b
		}
	}
	return m > 0 && m == len(e.skip)
}
