package trie

import (
	"context"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/vertex"
)

// How a whole-state check (check.go) runs: the top levels of the account trie
// are read first to split it into sub-tries (checkTask), at least
// planPerWorker of them a worker; the workers check whole sub-tries (each
// with its accounts' storage tries) and leave their keys in checkRun.known;
// then one checker walks the account trie from the root, taking the keys of
// those sub-tries from known instead of descending into them, and so checks
// the top levels and recomputes the root. Each checker reads one path at a
// time, so memory is bounded by the trie's depth (times a v2 branch's 16
// slots), not by the state's size.

const (
	// planPerWorker is how many sub-tries the account trie is split into per
	// worker, so that uneven sub-tries still keep every worker busy.
	planPerWorker = 32
	// planDepth bounds how deep the split goes (16^3 sub-tries at most).
	planDepth = 3
	// flushEvery is how many vertices a checker walks between publishing its
	// counts (for progress) and looking at its context.
	flushEvery = 4096
)

// fetched is a vertex as a check read it.
type fetched struct {
	v    *node
	size int // record bytes read from the store (0 for a frame's vertex)
	err  error
	read bool // set when read ahead (see children)
}

// checkTask is one sub-trie of the account trie that a worker checks.
type checkTask struct {
	id   vertex.ID
	path []byte
}

// subResult is a checked sub-trie's outcome: its key, whether it could be
// computed, and whether a key mismatch was found inside it.
type subResult struct {
	key     hashkey.Key
	ok      bool
	tainted bool
}

// checkRun is the state the checkers of one whole-state check share.
type checkRun struct {
	ctx        context.Context
	max        int
	top        vertex.ID // the persisted state's allocator top: records above it are no vertices
	violations atomic.Int64
	cancelled  atomic.Bool
	// known holds the results of the sub-tries the workers checked; it is
	// written before the walk from the root starts and only read by it.
	known map[vertex.ID]subResult

	mu    sync.Mutex
	total CheckCounts // counts the checkers published
}

func (r *checkRun) stopped() bool {
	return r.violations.Load() >= int64(r.max) || r.cancelled.Load()
}

func (r *checkRun) counts() CheckCounts {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total
}

// newChecker returns a checker of fr for run r.
func (r *checkRun) newChecker(fr *Frame, rootKind vertex.PayloadKind) *invariantChecker {
	c := &invariantChecker{fr: fr, run: r, rootKind: rootKind}
	c.h.fr = fr
	return c
}

// known returns the result of the sub-trie at id when a worker checked it
// (only the account trie is split).
func (c *invariantChecker) known(id vertex.ID, tk trieKind) (subResult, bool) {
	if c.run == nil || c.run.known == nil || tk != rootTrie {
		return subResult{}, false
	}
	r, ok := c.run.known[id]
	if ok && r.tainted {
		c.keyFails++
	}
	return r, ok
}

// count adds vertex v (a record of size bytes) to the checker's counts and
// every flushEvery vertices publishes them and looks at the context.
func (c *invariantChecker) count(v *node, size int) {
	n := &c.counts
	n.Vertices++
	n.Bytes += uint64(size)
	if v.Kind == vertex.Branch {
		n.Branches++
	} else {
		n.Leaves++
	}
	switch v.Payload {
	case vertex.AccountPayload:
		n.Accounts++
	case vertex.SlotPayload:
		n.Slots++
	}
	if n.Vertices%flushEvery == 0 {
		c.flush()
		if c.run.ctx.Err() != nil {
			c.run.cancelled.Store(true)
		}
	}
}

// flush publishes the checker's counts.
func (c *invariantChecker) flush() {
	r := c.run
	r.mu.Lock()
	r.total.add(c.counts)
	r.mu.Unlock()
	c.counts = CheckCounts{}
}

// lookupFrames returns vertex id as fr's frames hold it (nil: deleted) and
// whether they hold it at all. The persisted frames whose write has not
// landed yet (db.pending) count as frames: until it lands the backend holds
// an older state. The caller holds the database's read lock.
func (fr *Frame) lookupFrames(id vertex.ID) (*node, bool) {
	if v, ok := fr.inChain(id); ok {
		return v, true
	}
	if p := fr.db.pending; p != nil {
		return p.lookup(id)
	}
	return nil, false
}

// get reads vertex id: through the frames and the record cache for
// Frame.Check, through the frames and then the backend itself for a
// whole-state check, which leaves the cache alone.
func (c *invariantChecker) get(id vertex.ID) fetched {
	fr := c.fr
	if c.run == nil {
		v, err := fr.get(id)
		return fetched{v: v, err: err}
	}
	if v, ok := fr.lookupFrames(id); ok {
		return fetched{v: v}
	}
	if id > c.run.top {
		return fetched{} // never persisted: a record there is a load's leftover
	}
	rec, err := fr.db.backend.Vertex(id)
	if err != nil || rec == nil {
		if err != nil {
			err = vertexError(id, err)
		}
		return fetched{err: err}
	}
	v, err := fr.db.decode(id, rec)
	return fetched{v: v, size: len(rec), err: err}
}

// maxSpan is the widest range of IDs a check reads at once for a format-v1
// branch's children (a loader allocates them close together).
const maxSpan = 64

// children reads the children of branch v ahead of the walk into them: for
// format v2 its 16 slots (children, and any record in an unused slot) in one
// range read; for v1 its children in one range read when their IDs are
// within maxSpan of each other (out[n].read tells which were read). The
// frames' versions come first.
func (c *invariantChecker) children(v *node) *[16]fetched {
	fr, out := c.fr, new([16]fetched)
	want := uint16(0xffff) // the slots to read
	if v.Kids != nil {
		want = v.Used
	}
	lo, hi := ^vertex.ID(0), vertex.ID(0)
	for n := 0; n < 16; n++ {
		if want&(1<<n) == 0 {
			continue
		}
		id := v.Child(n)
		if v.Kids == nil {
			id = v.Base + vertex.ID(n)
		}
		if w, ok := fr.lookupFrames(id); ok {
			out[n] = fetched{v: w, read: true}
			want &^= 1 << n
			continue
		}
		if id > c.run.top || id < vertex.RootID {
			out[n].read = true // never persisted (the walk reports an ID out of range)
			want &^= 1 << n
			continue
		}
		lo, hi = min(lo, id), max(hi, id)
	}
	if want == 0 || (v.Kids != nil && (bits.OnesCount16(want) < 2 || hi-lo >= maxSpan)) {
		return out
	}
	slot := func(id vertex.ID) (int, bool) { // the slot id is read for
		if v.Kids == nil {
			n := int(id - v.Base)
			return n, want&(1<<n) != 0
		}
		for u := want; u != 0; u &= u - 1 {
			if n := bits.TrailingZeros16(u); v.Kids[n] == id {
				return n, true
			}
		}
		return 0, false
	}
	err := fr.db.backend.VertexRange(lo, int(hi-lo+1), func(id vertex.ID, rec []byte) error {
		if n, ok := slot(id); ok {
			w, err := fr.db.decode(id, rec)
			out[n] = fetched{v: w, size: len(rec), err: err}
		}
		return nil
	})
	for u := want; u != 0; u &= u - 1 {
		n := bits.TrailingZeros16(u)
		out[n].read = true // a slot the range did not return has no record
		if err != nil && out[n].v == nil && out[n].err == nil {
			id := v.Base + vertex.ID(n)
			if v.Kids != nil {
				id = v.Kids[n]
			}
			out[n].err = vertexError(id, err)
		}
	}
	return out
}

// checkState runs a whole-state check of fr with options o (defaults set);
// the caller holds fr for reading and the database's read lock.
func (fr *Frame) checkState(ctx context.Context, o *CheckOptions) (*CheckReport, error) {
	start := time.Now()
	r := &checkRun{ctx: ctx, max: o.Max, top: fr.db.base.alloc.Top}
	if o.Progress != nil {
		stop, done := make(chan struct{}), make(chan struct{})
		defer func() { close(stop); <-done }() // no Progress call after the return
		go func() {
			defer close(done)
			t := time.NewTicker(o.ProgressEvery)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					o.Progress(r.counts())
				}
			}
		}()
	}
	top := r.newChecker(fr, vertex.NoPayload)
	top.rootKind = top.findRootKind()
	var found []Violation
	var tasks []checkTask
	if o.Workers > 1 {
		tasks = top.plan(o.Workers * planPerWorker)
	}
	if len(tasks) > 1 {
		results, taskFound, consequent := fr.checkTasks(r, top.rootKind, tasks, o.Workers)
		r.known = make(map[vertex.ID]subResult, len(tasks))
		for i, t := range tasks {
			r.known[t.id] = results[i]
			found = append(found, taskFound[i]...)
		}
		top.consequent += consequent
	}
	k, ok := top.walk(vertex.RootID, nil, nil, rootTrie, "", 0, false)
	top.flush()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	found = append(found, top.found...)
	rep := &CheckReport{
		Format:     fr.db.format,
		Top:        fr.alloc.Top,
		Counts:     r.counts(),
		Workers:    o.Workers,
		Found:      int(r.violations.Load()),
		Stopped:    r.violations.Load() >= int64(r.max),
		Consequent: top.consequent,
		Violations: found[:min(len(found), o.Max)],
	}
	if ok {
		rep.Root = hashkey.EmptyRoot
		if !k.IsVoid() {
			rep.Root = k.Hash()
		}
	}
	rep.Elapsed = time.Since(start)
	return rep, nil
}

// checkTasks checks the sub-tries tasks on workers goroutines and returns
// each one's result and violations, and the consequent key mismatches.
func (fr *Frame) checkTasks(r *checkRun, rootKind vertex.PayloadKind, tasks []checkTask, workers int) ([]subResult, [][]Violation, int) {
	results := make([]subResult, len(tasks))
	found := make([][]Violation, len(tasks))
	var next atomic.Int64
	var consequent atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < min(workers, len(tasks)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := r.newChecker(fr, rootKind)
			defer func() { c.flush(); consequent.Add(int64(c.consequent)) }()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(tasks) || r.stopped() {
					return
				}
				t := tasks[i]
				c.found, c.keyFails = nil, 0
				k, ok := c.walk(t.id, nil, t.path, rootTrie, "", len(t.path), t.id != vertex.RootID)
				results[i] = subResult{key: k, ok: ok, tainted: c.keyFails > 0}
				found[i] = c.found
			}
		}()
	}
	wg.Wait()
	return results, found, int(consequent.Load())
}

// findRootKind returns the kind of payload the root trie holds, from its
// first leaf (or branch value) down the leftmost path; NoPayload when the
// trie is empty or that path is broken (the walk then reports it).
func (c *invariantChecker) findRootKind() vertex.PayloadKind {
	id := vertex.RootID
	for depth := 0; depth <= 2*len(hashkey.Hash{}); depth++ {
		f := c.get(id)
		if f.err != nil || f.v == nil {
			return vertex.NoPayload
		}
		if p := f.v.Payload; p == vertex.AccountPayload || p == vertex.RawPayload {
			return p
		}
		if f.v.Kind != vertex.Branch || f.v.Used == 0 {
			return vertex.NoPayload
		}
		for n := 0; n < 16; n++ {
			if f.v.Used&(1<<n) != 0 {
				id = f.v.Child(n)
				break
			}
		}
	}
	return vertex.NoPayload
}

// plan splits the account trie into sub-tries for the workers: the root's
// children, then theirs, level by level, until there are at least want of
// them or planDepth levels. A vertex that is not a branch, or that cannot be
// read or looks wrong, stays a sub-trie of its own (its worker reports what
// is wrong with it). The sub-tries come in key order. Fewer than two mean
// the state is too small to split.
func (c *invariantChecker) plan(want int) []checkTask {
	level := []checkTask{{id: vertex.RootID}}
	top := c.fr.alloc.Top
	for depth := 0; depth < planDepth && len(level) < want; depth++ {
		var next []checkTask
		split := false
		for _, t := range level {
			f := c.get(t.id)
			v := f.v
			if t.id > top || f.err != nil || v == nil || v.Kind != vertex.Branch || !c.childrenInRange(v, top) {
				next = append(next, t)
				continue
			}
			split = true
			for n := 0; n < 16; n++ {
				if v.Used&(1<<n) != 0 {
					p := append(append(append(make([]byte, 0, len(t.path)+len(v.Path)+1), t.path...), v.Path...), byte(n))
					next = append(next, checkTask{id: v.Child(n), path: p})
				}
			}
		}
		if !split {
			break
		}
		level = next
	}
	return level
}

// childrenInRange reports whether every child ID of branch v is a plausible
// vertex ID (the walk from the root reports any that is not).
func (c *invariantChecker) childrenInRange(v *node, top vertex.ID) bool {
	for n := 0; n < 16; n++ {
		if id := v.Child(n); v.Used&(1<<n) != 0 && (id < vertex.FirstFreeID || id > top) {
			return false
		}
	}
	return true
}
