package trie

import (
	"fmt"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie/internal/build"
	"github.com/hexstate/hexstate/trie/internal/nodeenc"
	"github.com/hexstate/hexstate/vertex"
)

// bulkInput is the sorted input of an in-memory bulk load: items with strictly
// increasing keys (bytes), each a leaf and, for an account, its storage.
type bulkInput interface {
	len() int
	key(i int) []byte
	// value is the raw value of item i, for a key that ends at the root
	// branch (a key that prefixes the others).
	value(i int) []byte
	// storageIDs returns how many IDs item i's storage trie takes, counting
	// with c.
	storageIDs(c *build.Counter, f vertex.Format, i int) int
	// add adds item i to w's builders.
	add(w *bulkWorker, i int) error
}

// bulkParallelMin is how many items a load needs before the root's sub-tries
// are built by parallel workers.
const bulkParallelMin = 4096

// bulkWorker builds into a frame with IDs from an allocator of its own.
type bulkWorker struct {
	alloc vertex.Allocator
	enc   nodeenc.Encoder
	sink  frameSink
	main  *build.Builder // the trie (or sub-trie) being loaded
	slots *build.Builder // an account's storage trie
	nib   []byte         // scratch: a key's nibbles
}

func newBulkWorker(fr *Frame, top vertex.ID) *bulkWorker {
	w := &bulkWorker{alloc: vertex.Allocator{Top: top}, sink: frameSink{fr: fr}}
	w.main = build.New(fr.db.format, &w.alloc, &w.enc, w.sink.put)
	w.slots = build.New(fr.db.format, &w.alloc, &w.enc, w.sink.put)
	return w
}

// bulkRun is one child sub-trie of the root: items lo..hi-1, which share
// nibble n at the root's branching depth.
type bulkRun struct {
	n      byte
	lo, hi int
	ids    int       // IDs its interior takes (not its top vertex's)
	top    vertex.ID // the allocator's top before its interior
	id     vertex.ID // its top vertex's ID
	key    hashkey.Key
	err    error
}

// buildSorted builds in as the trie of frame fr, which is empty, with the IDs
// and records of one build.Builder fed every item in order (what a
// StateLoader writes), whatever the number of workers.
//
// A large load on several workers is split into the runs of the root branch's
// children (the items sharing the nibble at the root's branching depth d0).
// A counting pass (build.Counter: no hashing) finds the IDs each run takes; the
// runs get ID ranges in exactly the order the single builder takes them:
//
//	format v2: [run 0][run 1]...[root's 16 slots]
//	format v1: [run 0][run 0's top][run 1][run 1's top]...
//
// and one build.Builder per run, starting at depth d0+1 with its top at the
// root's child ID, builds it on one of up to workers goroutines. The root
// branch is assembled last from the runs' keys.
func (fr *Frame) buildSorted(in bulkInput) error {
	n := in.len()
	if n == 0 {
		return nil // an empty load leaves the trie empty
	}
	if workers := fr.db.bulkWorkers(); n >= bulkParallelMin && workers > 1 {
		return fr.buildParallel(in, workers)
	}
	w := newBulkWorker(fr, fr.alloc.Top)
	w.main.Reset(vertex.RootID, 0)
	for i := 0; i < n; i++ {
		if err := in.add(w, i); err != nil {
			return fmt.Errorf("trie: bulk load: item %d: %w", i, err)
		}
	}
	if _, _, err := w.main.Finish(); err != nil {
		return fmt.Errorf("trie: bulk load: %w", err)
	}
	fr.alloc = w.alloc
	return nil
}

func (fr *Frame) buildParallel(in bulkInput, workers int) error {
	f := fr.db.format
	first, last := in.key(0), in.key(in.len()-1)
	d0 := build.NibblePrefix(first, last)
	lo := 0
	if 2*len(first) == d0 {
		lo = 1 // the first key ends at the root branch: its value
	}
	runs := splitRuns(in, lo, in.len(), d0)
	forEach(len(runs), workers, func(i int) {
		r := &runs[i]
		var c, s build.Counter
		c.Reset(f)
		for j := r.lo; j < r.hi; j++ {
			c.Add(in.key(j))
			r.ids += in.storageIDs(&s, f, j)
		}
		r.ids += c.Finish()
	})

	// The IDs, in the order a single builder takes them.
	alloc := fr.alloc
	root := vertex.Vertex{Kind: vertex.Branch}
	v1 := f == vertex.FormatV1
	if v1 {
		root.Kids = new([16]vertex.ID)
	}
	for i := range runs {
		r := &runs[i]
		r.top = alloc.Top
		alloc.Top += vertex.ID(r.ids)
		if v1 {
			r.id = alloc.AddChild(&root, r.n)
		}
	}
	if !v1 { // the root closes last
		root.Base = alloc.Take(vertex.BranchSlots)
		for i := range runs {
			runs[i].id = alloc.AddChild(&root, runs[i].n)
		}
	}

	fr.vtx.Extend(alloc.Top)
	forEach(len(runs), workers, func(i int) {
		r := &runs[i]
		w := newBulkWorker(fr, r.top)
		w.main.Reset(r.id, d0+1)
		for j := r.lo; j < r.hi && r.err == nil; j++ {
			r.err = in.add(w, j)
		}
		if r.err == nil {
			_, r.key, r.err = w.main.Finish()
		}
		if took := int(w.alloc.Top - r.top); r.err == nil && took != r.ids {
			r.err = fmt.Errorf("took %d IDs, %d counted", took, r.ids)
		}
	})
	var kids [16]hashkey.Key
	for _, r := range runs {
		if r.err != nil {
			return fmt.Errorf("trie: bulk load: sub-trie %x of the root: %w", r.n, r.err)
		}
		kids[r.n] = r.key
	}
	w := newBulkWorker(fr, alloc.Top)
	root.Path = hashkey.AppendNibbles(nil, first)[:d0]
	if lo == 1 {
		root.Payload, root.Value = vertex.RawPayload, in.value(0)
	}
	var ck []byte
	build.HashBranch(&w.enc, &root, &kids, &ck)
	if err := w.sink.put(vertex.RootID, &root); err != nil {
		return fmt.Errorf("trie: bulk load: root: %w", err)
	}
	fr.alloc = alloc
	return nil
}

// splitRuns returns the runs of items lo..hi-1 (sorted, sharing their first d
// nibbles, none ending there) with the same nibble at d, in order. Runs are
// found by binary search: they are long near the root.
func splitRuns(in bulkInput, lo, hi, d int) []bulkRun {
	var runs []bulkRun
	for i := lo; i < hi; {
		n := build.NibbleAt(in.key(i), d)
		end := i + 1 + sort.Search(hi-i-1, func(j int) bool { return build.NibbleAt(in.key(i+1+j), d) != n })
		runs = append(runs, bulkRun{n: n, lo: i, hi: end})
		i = end
	}
	return runs
}

// bulkWorkers is how many goroutines a bulk load uses.
func (db *DB) bulkWorkers() int {
	if db.workers > 0 {
		return db.workers
	}
	return runtime.GOMAXPROCS(0)
}

// forEach calls fn(0..n-1) on up to workers goroutines.
func forEach(n, workers int, fn func(i int)) {
	if workers <= 1 || n <= 1 {
		for i := 0; i < n; i++ {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				fn(i)
			}
		}()
	}
	wg.Wait()
}
