package reccache

import (
	"unsafe"

	"github.com/hexstate/hexstate/internal/manual"
	"github.com/hexstate/hexstate/vertex"
)

// index is a shard's table from vertex ID to ring offset: open-addressed,
// linear probing, at most three quarters full, in memory from manual.
//
// A slot is 8 bytes: a 32-bit tag of the ID (a hash), the pin bit, and the
// entry's ring offset in 4-byte units plus one (so a used slot is never 0,
// the free slot). The ID itself is not in the slot: the ring entry the slot
// points to begins with it, and a lookup that finds its tag compares the
// ID there, in the record it is about to read anyway. Half the bytes of an
// (ID, offset) pair hold as many entries in an eighth of the budget as the
// pairs did in a quarter, and the ring gets the difference, which decides
// whether a state fits (benchmarks.md §3, 2026-12-08: at 1M accounts and
// 256 MiB, the pairs left a ring that held 1.72M of the state's 2.07M
// records; now it holds 2.02M).
//
// The probe for an ID starts at the slot its tag picks ((tag × slots) >>
// 32); removals shift the later entries of their run back (no tombstones).
// Entries with the same start slot share the tag's high bits, so the low
// bits tell them apart: a false match (a tag equal, the ID in the ring not)
// costs one more ring read, and the probe goes on.
type index struct {
	slots []uint64
	n     int
	bound int // the most slots it may grow to
	mem   manual.Region
}

const (
	// slotPin is the pin bit of a slot; slotOff the bits of its offset.
	slotPin = uint64(1) << 31
	slotOff = slotPin - 1
	// maxShardRing is the most ring bytes a slot can point into.
	maxShardRing = 4 * (int(slotOff) - 1)
)

// newIndex returns an empty index of 64 slots that doubles as entries
// arrive, up to maxSlots (64 at least).
func newIndex(maxSlots int) index {
	x := index{bound: max(64, maxSlots)}
	x.slots, x.mem = indexSlots(min(64, x.bound))
	return x
}

// indexSlots returns n zeroed (free) slots in memory from manual, and that
// memory.
func indexSlots(n int) ([]uint64, manual.Region) {
	mem := manual.New(8 * n)
	b := mem.Bytes()
	return unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), n), mem
}

// tagOf returns id's tag: the high half of a multiplicative hash, mixed
// (the shard is the top bits of another product, which it does not repeat).
func tagOf(id vertex.ID) uint32 {
	h := uint64(id) * 0xff51afd7ed558ccd
	h ^= h >> 29
	h *= 0xc4ceb9fe1a85ec53
	return uint32(h >> 32)
}

// home returns the slot where the probe for tag starts.
func (x *index) home(tag uint32) int {
	return int(uint64(tag) * uint64(len(x.slots)) >> 32)
}

// next returns the slot after i, cyclically.
func (x *index) next(i int) int {
	if i++; i == len(x.slots) {
		return 0
	}
	return i
}

// Len is the number of entries; Max the most the index may hold.
func (x *index) Len() int { return x.n }
func (x *index) Max() int { return 3 * x.bound / 4 }

// Bytes is the memory the slots take now; MaxBytes at the index's largest.
func (x *index) Bytes() int    { return 8 * len(x.slots) }
func (x *index) MaxBytes() int { return 8 * x.bound }

// At returns the value in slot i: the ring offset, with pinBit when pinned.
func (x *index) At(i int) uint64 {
	v := x.slots[i]
	return (v&slotOff-1)*4 | (v&slotPin)<<32
}

// value returns the slot of tag's entry at ring offset off (a multiple of 4,
// with pinBit when pinned).
func value(tag uint32, off uint64) uint64 {
	return uint64(tag)<<32 | (off&pinBit)>>32 | ((off&^pinBit)/4 + 1)
}

// setAt makes off (with pinBit) the value of slot i, keeping its tag.
func (x *index) setAt(i int, off uint64) { x.slots[i] = value(uint32(x.slots[i]>>32), off) }

// insert adds an entry for an ID not in the index (the caller found none),
// growing the slots first when they are three quarters full. The caller
// keeps Len below Max.
func (x *index) insert(tag uint32, off uint64) {
	if 4*(x.n+1) > 3*len(x.slots) {
		x.grow()
	}
	x.place(value(tag, off))
	x.n++
}

// place puts slot value v in the first free slot of its probe.
func (x *index) place(v uint64) {
	i := x.home(uint32(v >> 32))
	for x.slots[i] != 0 {
		i = x.next(i)
	}
	x.slots[i] = v
}

// grow moves the entries to twice the slots, at most the bound.
func (x *index) grow() {
	old, mem := x.slots, x.mem
	x.slots, x.mem = indexSlots(min(2*len(old), x.bound))
	for _, v := range old {
		if v != 0 {
			x.place(v)
		}
	}
	mem.Free()
}

// RemoveAt deletes the entry in slot i. Each later entry of the run whose
// home is not cyclically after the hole moves back into it, so that every
// entry stays reachable from its home without a free slot between.
func (x *index) RemoveAt(i int) {
	n := len(x.slots)
	for j := x.next(i); x.slots[j] != 0; j = x.next(j) {
		h := x.home(uint32(x.slots[j] >> 32))
		if (j-h+n)%n >= (j-i+n)%n {
			x.slots[i] = x.slots[j]
			i = j
		}
	}
	x.slots[i] = 0
	x.n--
}

// Free releases the slots; the index must not be used afterwards.
func (x *index) Free() {
	x.mem.Free()
	x.slots, x.n = nil, 0
}
