package trie

import (
	"fmt"

	"github.com/hexstate/hexstate/vertex"
)

// kidReader is the state of readKids at one depth: which children a read is
// for, and the callbacks the reads call (made once per depth, so that a read
// allocates nothing).
type kidReader struct {
	L    *copyLevel
	got  uint16        // the slots read
	want []vertex.ID   // the IDs a read is for, ascending
	slot []int         // and their slots
	k    int           // the position in want of the last record handed
	ids  [16]vertex.ID // v1 children by ID: what want points into
	slts [16]int
	// takeSlot and takeWanted are the methods of the same names, as values.
	takeSlot, takeWanted func(vertex.ID, []byte) error
}

func (r *kidReader) init(L *copyLevel) {
	r.L = L
	r.takeSlot, r.takeWanted = r.takeSlotFn, r.takeWantedFn
}

// put adds the record of the child in slot, source ID rid, to L.buf.
func (r *kidReader) put(slot int, rid vertex.ID, rec []byte) {
	L := r.L
	L.ids[slot], L.offs[slot] = rid, [2]int{len(L.buf), len(L.buf) + len(rec)}
	L.buf = append(L.buf, rec...)
	r.got |= 1 << slot
}

// takeSlotFn takes a record of a v2 branch's slot range (L.v's).
func (r *kidReader) takeSlotFn(rid vertex.ID, rec []byte) error {
	v := &r.L.v
	if s := int(rid - v.Base); v.Used&(1<<s) != 0 {
		r.put(s, rid, rec)
	}
	return nil
}

// takeWantedFn takes a record whose ID is in r.want (handed in ascending
// order, others skipped).
func (r *kidReader) takeWantedFn(rid vertex.ID, rec []byte) error {
	for r.k < len(r.want) && r.want[r.k] < rid {
		r.k++
	}
	if r.k < len(r.want) && r.want[r.k] == rid {
		r.put(r.slot[r.k], rid, rec)
	}
	return nil
}

// readKids reads the records of v's children into L: one range read over a
// v2 branch's slots; for v1, one range read per cluster of close child IDs
// (a child far from the others is a cluster of one). v is &L.v.
func (s *copySource) readKids(L *copyLevel, id vertex.ID, v *vertex.Vertex) error {
	L.buf = L.buf[:0]
	L.got = 0
	if v.Kids == nil {
		if err := s.srcRange(v.Base, vertex.BranchSlots, L.takeSlot); err != nil {
			return fmt.Errorf("trie: copy: reading the children of %d: %w", id, err)
		}
	} else if err := s.readV1Kids(L, v); err != nil {
		return fmt.Errorf("trie: copy: reading the children of %d: %w", id, err)
	}
	if L.got != v.Used {
		return fmt.Errorf("%w: branch %d: children %016b missing", ErrCopy, id, v.Used&^L.got)
	}
	L.sliceRecs()
	return nil
}

// sliceRecs points L.recs into L.buf, now that it no longer moves.
func (L *copyLevel) sliceRecs() {
	for n := 0; n < 16; n++ {
		if L.got&(1<<n) != 0 {
			o := L.offs[n]
			L.recs[n] = L.buf[o[0]:o[1]:o[1]]
		}
	}
}

// copyGap is the largest gap between two v1 child IDs read with one range
// read.
const copyGap = 8

// readV1Kids reads the children of v1 branch v, a cluster of IDs at most
// copyGap apart with one range read.
func (s *copySource) readV1Kids(L *copyLevel, v *vertex.Vertex) error {
	r := &L.kidReader
	n := 0
	for s := 0; s < 16; s++ {
		if v.Used&(1<<s) == 0 {
			continue
		}
		i := n
		for i > 0 && r.ids[i-1] > v.Kids[s] { // insertion sort by ID
			r.ids[i], r.slts[i] = r.ids[i-1], r.slts[i-1]
			i--
		}
		r.ids[i], r.slts[i] = v.Kids[s], s
		n++
	}
	for i := 0; i < n; {
		j := i + 1
		for j < n && r.ids[j]-r.ids[j-1] <= copyGap {
			j++
		}
		r.want, r.slot, r.k = r.ids[i:j], r.slts[i:j], 0
		if err := s.srcRange(r.ids[i], int(r.ids[j-1]-r.ids[i])+1, r.takeWanted); err != nil {
			return err
		}
		i = j
	}
	return nil
}
