package trie

import (
	"math"
	"math/bits"
	"slices"
	"sync"

	"github.com/hexstate/hexstate/vertex"
)

// A copy reads a scattered source that fits in memory with sequential scans
// first.
//
// The walk visits the source's vertices in key order. In a store whose IDs
// were handed out as vertices appeared (one grown block by block, the v1
// layout's usual history) that order is random in ID, so every cluster of
// children costs a seek, and the read-ahead's interval scans do not apply
// (copy_table.go): the copy then takes several times as long as reading
// the source in ID order and writing the records. When the source is so
// scattered (sourceLaidOut) and its records (every record up to the
// allocator's top, replaced ones included) fit CopyOptions.PreloadBytes,
// the copy instead reads them all into memory first, with one sequential
// scan per core over adjacent ID intervals, and the walk reads from there:
// no seek at all, and no read-ahead workers. A source larger than the bound
// is copied as without it; the scan stops as soon as a part exceeds its
// share, so a source that does not fit costs at most one bound's worth of
// reading (and none when the per-ID index alone would not fit).
//
// A source laid out by the builder is not preloaded: there the read-ahead
// scans each sub-trie's interval while the walk and the writer run, which
// a preload would put before them (measured: 20-30 % slower, and more
// memory; docs/benchmarks.md §7).
//
// Like the read-ahead, the preload is never trusted beyond what it read:
// the walk checks every record as it does any other, a read the preload
// does not cover goes to the source, and a preload whose scan failed is
// dropped (the walk then reads the source itself and reports what it
// finds).

// DefaultPreloadBytes is CopyOptions.PreloadBytes' default: 128 MiB.
const DefaultPreloadBytes = 128 << 20

// copyPreloadGuess is the record size a preload sizes its buffers for.
const copyPreloadGuess = 48

// copyPreload is a source read whole into memory: its ID range [1, top] in
// adjacent parts, one range table each.
type copyPreload struct {
	parts []*rangeTable
}

// preloadSource reads the records of src's IDs [1, top] into memory on
// workers goroutines, within about budget bytes (the records, and 4 bytes
// per ID and per record for the tables' indexes); nil when they do not fit
// or a scan failed.
func preloadSource(src Backend, top vertex.ID, budget, workers int) *copyPreload {
	idxBytes := 4 * uint64(top)
	if budget <= 0 || top < vertex.RootID || idxBytes >= uint64(budget)/2 {
		return nil
	}
	workers = max(1, workers)
	// Each part's share of the records, less their ends (~4 bytes per
	// ~40-byte record), and within the int32 offsets of a range table
	// (half of their range: the record that crosses the share is kept).
	share := min((budget-int(idxBytes))/workers*9/10, math.MaxInt32/2)
	// Parts start at multiples of a v2 branch's slot count past the root,
	// so that fewer slot groups straddle two parts (a read across parts
	// goes to the source).
	span := (uint64(top) + uint64(workers) - 1) / uint64(workers)
	span = (span + vertex.BranchSlots - 1) / vertex.BranchSlots * vertex.BranchSlots
	p := &copyPreload{}
	for lo := uint64(vertex.RootID); lo <= uint64(top); lo += span {
		p.parts = append(p.parts, &rangeTable{lo: vertex.ID(lo), hi: vertex.ID(min(lo+span-1, uint64(top)))})
	}
	ok := make([]bool, len(p.parts))
	var wg sync.WaitGroup
	for i, t := range p.parts {
		wg.Go(func() {
			s := newCopySource(src, true)
			defer s.cursors.close()
			// Sized up front, as a guess (pages not written to cost no
			// memory): appends that double a buffer of this size copy it
			// and fault its pages in twice.
			ids := int(t.hi-t.lo) + 1
			t.buf, t.ends = make([]byte, 0, min(share, copyPreloadGuess*ids)), make([]int32, 0, min(ids, share/copyPreloadGuess))
			full, err := t.load(&s, t.lo, t.hi, share)
			ok[i] = !full && err == nil
		})
	}
	wg.Wait()
	if slices.Contains(ok, false) {
		return nil
	}
	return p
}

// records is how many source records the preload holds.
func (p *copyPreload) records() uint64 {
	n := 0
	for _, t := range p.parts {
		n += len(t.ends)
	}
	return uint64(n)
}

// sourceLaidOut reports whether the source's sub-tries at the read-ahead's
// depth lie in ID intervals that follow each other in key order, as the
// builder lays them out (copy_table.go): it looks at the first
// copyLayoutProbe of them, and says yes when at least three in four come
// after the one before (a grown store's come in random order: about half)
// and, in v2, took their slots after their children's sub-tries
// (groupLast: not so a store an earlier version built, or one grown by
// frames in key order).
func sourceLaidOut(src Backend, format vertex.Format, top vertex.ID) bool {
	e := subtrieEnum{src: newCopySource(src, true), depth: copyDepth(top), v1: format == vertex.FormatV1}
	defer e.src.cursors.close()
	var prev vertex.ID
	n, after := 0, 0
	for probed := 0; probed < 4*copyLayoutProbe && n < copyLayoutProbe; probed++ {
		t := e.next()
		if t == nil {
			break
		}
		if t.end == 0 {
			continue // a v2 leaf without storage: no ID of its own
		}
		if n > 0 && t.end > prev && e.groupLast(t.rec) {
			after++
		}
		prev = t.end
		n++
	}
	return n < 2 || 4*after >= 3*(n-1)
}

// groupLast reports whether the v2 branch of record rec took its slots
// after its children's sub-tries: the last ID given below its last child
// lies below its base. It says yes when it cannot tell (a v1 source, a top
// that is not a branch, a plain leaf in the last slot, a read that fails).
func (e *subtrieEnum) groupLast(rec []byte) bool {
	var v vertex.Vertex
	var acc vertex.Account
	if e.v1 || vertex.DecodeInto(&v, &acc, rec) != nil || v.Kind != vertex.Branch || v.Used == 0 {
		return true
	}
	last := v.Base + vertex.ID(15-bits.LeadingZeros16(v.Used))
	crec, found, err := e.src.srcVertex(last, e.probe[:0])
	e.probe = crec
	if err != nil || !found {
		return true
	}
	end := e.lastID(last, crec)
	return end == 0 || end < v.Base
}

// copyLayoutProbe is how many sub-tries sourceLaidOut looks at.
const copyLayoutProbe = 32

// find returns the part that holds [first, first+n), or nil when none does.
func (p *copyPreload) find(first vertex.ID, n int) *rangeTable {
	for _, t := range p.parts {
		if t.covers(first, n) {
			return t
		}
	}
	return nil
}
