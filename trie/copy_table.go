package trie

import (
	"errors"

	"github.com/hexstate/hexstate/vertex"
)

// A read-ahead worker reads a sub-trie's whole ID range with one sequential
// scan when the source lays sub-tries out in ranges of their own.
//
// A store written by the builder (a StateLoader, a copy, a migration) gives
// IDs in the order it finishes vertices: the IDs given in a sub-trie form an
// interval, and the intervals of the sub-tries at one depth follow each
// other in key order. A sub-trie's interval ends at the last ID given in it
// (the top's own in v1; in v2 the top branch's last slot, or an account's
// storage trie's top: lastGiven, read from the top's record) and
// starts after the end of the sub-trie before it. Scanning it is one seek and a
// sequential copy, against a seek per scattered cluster of children for the
// walk's reads: the walk's reads are then served from memory (rangeTable).
// The same holds at every depth: a child's sub-trie's interval starts after
// the sibling's before it (its parent's start for the first child) and ends
// at its own last ID, so a sub-trie too large for one table (an account
// with a large storage trie) is scanned child sub-trie by child sub-trie
// (prefetchWorker.cover), rather than read by a seek per group.
//
// Nothing depends on the guess: a read outside the table goes to the source,
// and an ID inside it that the scan did not see is absent from the source.
// A store whose sub-tries are not laid out so (one grown by frames, whose
// IDs are handed out as vertices appear) gives intervals that are empty,
// huge or mostly other sub-tries' records: those beyond copyTableIDs are not
// scanned, and once most scanned records go unused the workers stop
// scanning (copyPrefetch.scanOff).

// copyTableIDs bounds the interval a worker scans, and copyTableBytes the
// records it keeps of it (the scan stops there; the rest is read as without
// a table).
const (
	copyTableIDs   = 16 * copySubtrieIDs
	copyTableBytes = 8 << 20
	// copyTableMinIDs is the smallest interval worth a table of its own
	// below a sub-trie's top: a few groups' reads, each a seek without it.
	copyTableMinIDs = 4 * vertex.BranchSlots
)

// rangeTable holds the source's records of the IDs [lo, hi], as one scan read
// them: idx[id-lo] is the record's index in ends, -1 when there is none.
type rangeTable struct {
	lo, hi vertex.ID
	idx    []int32
	ends   []int32
	buf    []byte
	handed []uint64 // a bit per record: handed to a read
	used   int      // records handed to a read, each counted once
}

// load scans [lo, hi] of src into t, stopping once it holds maxBytes of
// records (t.hi is then the last ID scanned, and full is set).
func (t *rangeTable) load(src *copySource, lo, hi vertex.ID, maxBytes int) (full bool, err error) {
	t.lo, t.hi, t.used = lo, hi, 0
	t.ends, t.buf, t.handed = t.ends[:0], t.buf[:0], t.handed[:0]
	n := int(hi-lo) + 1
	if cap(t.idx) < n {
		t.idx = make([]int32, n)
	}
	t.idx = t.idx[:n]
	for i := range t.idx {
		t.idx[i] = -1
	}
	err = src.srcRange(lo, n, func(id vertex.ID, rec []byte) error {
		if full {
			return errTableFull
		}
		t.buf = append(t.buf, rec...)
		t.idx[id-lo] = int32(len(t.ends))
		t.ends = append(t.ends, int32(len(t.buf)))
		if len(t.buf) >= maxBytes {
			full, t.hi = true, id
		}
		return nil
	})
	if err == errTableFull {
		err = nil
	}
	for range (len(t.ends) + 63) / 64 {
		t.handed = append(t.handed, 0)
	}
	return full, err
}

// errTableFull stops a table's scan at its byte bound.
var errTableFull = errors.New("trie: copy: range table full")

// covers reports whether [first, first+n) lies in the table's interval.
func (t *rangeTable) covers(first vertex.ID, n int) bool {
	return first >= t.lo && n > 0 && uint64(first-t.lo)+uint64(n)-1 <= uint64(t.hi-t.lo)
}

// each calls fn for the table's records in [first, first+n), in ID order;
// the range must be covered.
func (t *rangeTable) each(first vertex.ID, n int, fn func(vertex.ID, []byte) error) error {
	for i := int(first - t.lo); i < int(first-t.lo)+n; i++ {
		k := t.idx[i]
		if k < 0 {
			continue
		}
		start := int32(0)
		if k > 0 {
			start = t.ends[k-1]
		}
		if w, b := k/64, uint64(1)<<(k%64); t.handed[w]&b == 0 {
			t.handed[w] |= b
			t.used++
		}
		if err := fn(t.lo+vertex.ID(i), t.buf[start:t.ends[k]:t.ends[k]]); err != nil {
			return err
		}
	}
	return nil
}
