package reccache

import "github.com/hexstate/hexstate/vertex"

// index maps the vertex IDs a shard holds to the ring offsets of their
// entries. It is an open-addressed table (linear probing) of (ID, offset)
// pairs side by side, so that a lookup usually costs one CPU cache miss,
// where a Go map of the same size costs two or three (its control word, then
// its slots); the cache's lookups and updates, one per vertex a block reads
// or a persist writes, spent most of their time in those misses. The table
// holds no pointers. vertex.NoID (0, never a vertex) marks a free slot, and a
// deletion moves the later entries of its probe run back (no tombstones), so
// lookups never probe past the run. It is at most three quarters full: it
// doubles when an insert would go past that, and never shrinks (a shard holds
// at most its budget's worth of entries).
type index struct {
	slots []indexSlot
	n     int
}

// indexSlot is one entry of an index: a vertex ID and its entry's ring offset.
type indexSlot struct {
	id  vertex.ID
	off uint64
}

// minIndexSlots is the size of a new index.
const minIndexSlots = 256

func newIndex() index { return index{slots: make([]indexSlot, minIndexSlots)} }

// home returns the slot where the probe for id starts. The mix differs from
// the one that picks a shard (Cache.shard), whose IDs share its top bits.
func (x *index) home(id vertex.ID) int {
	h := uint64(id) * 0xff51afd7ed558ccd
	h ^= h >> 32
	return int(h & uint64(len(x.slots)-1))
}

// find returns the slot holding id, or -1.
func (x *index) find(id vertex.ID) int {
	mask := len(x.slots) - 1
	for i := x.home(id); ; i = (i + 1) & mask {
		switch x.slots[i].id {
		case id:
			return i
		case vertex.NoID:
			return -1
		}
	}
}

// get returns the offset of id's entry.
func (x *index) get(id vertex.ID) (uint64, bool) {
	if i := x.find(id); i >= 0 {
		return x.slots[i].off, true
	}
	return 0, false
}

// set makes off the offset of id's entry (id is not vertex.NoID).
func (x *index) set(id vertex.ID, off uint64) {
	if 4*(x.n+1) > 3*len(x.slots) {
		x.grow()
	}
	mask := len(x.slots) - 1
	for i := x.home(id); ; i = (i + 1) & mask {
		switch e := &x.slots[i]; e.id {
		case id:
			e.off = off
			return
		case vertex.NoID:
			*e = indexSlot{id: id, off: off}
			x.n++
			return
		}
	}
}

// remove deletes id's entry if its offset is off (an entry replaced since
// stays); with any true, whatever its offset.
func (x *index) remove(id vertex.ID, off uint64, any bool) {
	i := x.find(id)
	if i < 0 || (!any && x.slots[i].off != off) {
		return
	}
	// Move back each later entry of the run whose probe started at or before
	// the hole (cyclically), so that every entry stays reachable from its
	// home without passing a free slot.
	mask := len(x.slots) - 1
	for j := (i + 1) & mask; x.slots[j].id != vertex.NoID; j = (j + 1) & mask {
		h := x.home(x.slots[j].id)
		if (j-h)&mask >= (j-i)&mask {
			x.slots[i] = x.slots[j]
			i = j
		}
	}
	x.slots[i] = indexSlot{}
	x.n--
}

// grow doubles the table.
func (x *index) grow() {
	old := x.slots
	x.slots, x.n = make([]indexSlot, 2*len(old)), 0
	for _, e := range old {
		if e.id != vertex.NoID {
			x.set(e.id, e.off)
		}
	}
}
