package idtable

import (
	"unsafe"

	"github.com/hexstate/hexstate/internal/manual"
	"github.com/hexstate/hexstate/vertex"
)

// Table maps vertex IDs to values of type V; vertex.NoID is never in it.
// The zero Table is not ready: use New. It is not safe for concurrent use
// with a Set or a removal; lookups may run beside each other.
type Table[V any] struct {
	slots []entry[V]
	n     int
	load  int // quarters of the slots that may hold IDs
	// manual says the slots are in memory from manual (NewManual), and mem
	// is that memory.
	manual bool
	mem    manual.Region
}

type entry[V any] struct {
	id vertex.ID
	v  V
}

// New returns an empty table with room for ids IDs before it grows, never
// more than quarters/4 full (quarters between 1 and 3).
func New[V any](ids, quarters int) Table[V] {
	t := Table[V]{load: min(max(quarters, 1), 3)}
	t.slots = make([]entry[V], t.slotsFor(ids))
	return t
}

// slotsFor returns the power of two of slots (64 at least) that holds ids
// IDs within the load bound.
func (t *Table[V]) slotsFor(ids int) int {
	n := 64
	for t.load*n < 4*ids {
		n *= 2
	}
	return n
}

// Len is the number of IDs in the table.
func (t *Table[V]) Len() int { return t.n }

// Slots is the size of the table.
func (t *Table[V]) Slots() int { return len(t.slots) }

// home returns the slot where the probe for id starts: the bits 32 and up of
// a multiplicative hash, mixed down (the vertex cache picks its shard by the
// top bits of another product, which these do not repeat).
func (t *Table[V]) home(id vertex.ID) int {
	h := uint64(id) * 0xff51afd7ed558ccd
	h ^= h >> 32
	return int(h & uint64(len(t.slots)-1))
}

// Find returns the slot holding id, or -1 (always for vertex.NoID): for At
// and RemoveAt, valid until the next Set or removal.
func (t *Table[V]) Find(id vertex.ID) int {
	if id == vertex.NoID {
		return -1
	}
	mask := len(t.slots) - 1
	for i := t.home(id); ; i = (i + 1) & mask {
		switch t.slots[i].id {
		case id:
			return i
		case vertex.NoID:
			return -1
		}
	}
}

// At returns the value in slot i (from Find).
func (t *Table[V]) At(i int) V { return t.slots[i].v }

// Get returns id's value.
func (t *Table[V]) Get(id vertex.ID) (V, bool) {
	if i := t.Find(id); i >= 0 {
		return t.slots[i].v, true
	}
	var zero V
	return zero, false
}

// Set makes v id's value; it ignores vertex.NoID, which is never a vertex.
func (t *Table[V]) Set(id vertex.ID, v V) { t.Swap(id, v) }

// Swap is Set returning id's value before it, if it had one.
func (t *Table[V]) Swap(id vertex.ID, v V) (was V, had bool) {
	if id == vertex.NoID {
		return was, false
	}
	mask := len(t.slots) - 1
	for i := t.home(id); ; i = (i + 1) & mask {
		switch e := &t.slots[i]; e.id {
		case id:
			was, e.v = e.v, v
			return was, true
		case vertex.NoID:
			if !t.Fits(t.n + 1) { // a new ID: grow first (a replacement never does)
				t.Reserve(1)
				return t.Swap(id, v)
			}
			*e = entry[V]{id: id, v: v}
			t.n++
			return was, false
		}
	}
}

// Remove deletes id's entry, if any.
func (t *Table[V]) Remove(id vertex.ID) {
	if i := t.Find(id); i >= 0 {
		t.RemoveAt(i)
	}
}

// RemoveAt deletes the entry in slot i (from Find). Each later entry of the
// probe run whose home is at or before the hole (cyclically) moves back into
// it, so that every entry stays reachable from its home without a free slot
// between.
func (t *Table[V]) RemoveAt(i int) {
	mask := len(t.slots) - 1
	for j := (i + 1) & mask; t.slots[j].id != vertex.NoID; j = (j + 1) & mask {
		if h := t.home(t.slots[j].id); (j-h)&mask >= (j-i)&mask {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = entry[V]{}
	t.n--
}

// Fits reports whether ids IDs fit the table within its load bound.
func (t *Table[V]) Fits(ids int) bool { return 4*ids <= t.load*len(t.slots) }

// Suits reports whether the table could serve for ids IDs in place of a new
// one: they fit, and it is at most twice the size a new one would be.
func (t *Table[V]) Suits(ids int) bool {
	return t.Fits(ids) && len(t.slots) <= 2*t.slotsFor(ids)
}

// Prefault writes one slot in every 4 KiB of the table, so that its pages
// are in memory before a burst of Sets, which would otherwise take a page
// fault per page of a fresh table.
func (t *Table[V]) Prefault() {
	step := max(1, 4096/int(unsafe.Sizeof(entry[V]{})))
	for i := 0; i < len(t.slots); i += step {
		t.slots[i] = entry[V]{}
	}
}

// Reserve makes room for n more IDs within the load bound: when they do not
// fit, the table is rebuilt at twice its size, or larger if that is not
// enough (Grown).
func (t *Table[V]) Reserve(n int) {
	if t.Fits(t.n + n) {
		return
	}
	g := t.Grown(n)
	t.Free()
	*t = g
}

// Grown returns a new table holding t's entries with room for n more IDs:
// twice t's size, or larger if that is not enough, its slots where t's are
// (the Go heap or manual). It only reads t, so it may run beside lookups of
// t, not beside a Set or removal; a caller that builds it so swaps it in
// later (Reserve does both at once).
func (t *Table[V]) Grown(n int) Table[V] {
	size := max(2*len(t.slots), t.slotsFor(t.n+n))
	g := Table[V]{load: t.load, manual: t.manual}
	if t.manual {
		g.slots, g.mem = manualSlots[V](size)
	} else {
		g.slots = make([]entry[V], size)
	}
	for _, e := range t.slots {
		if e.id != vertex.NoID {
			g.Set(e.id, e.v)
		}
	}
	return g
}

// NewManual is New with the slots in memory from manual, outside the Go heap
// (so that neither the collector's scan nor the heap's growth, twice what is
// live, counts them): the table grows as one from New does. V must hold no
// Go pointers. Free releases the memory.
func NewManual[V any](ids, quarters int) Table[V] {
	t := Table[V]{load: min(max(quarters, 1), 3), manual: true}
	t.slots, t.mem = manualSlots[V](t.slotsFor(ids))
	return t
}

// manualSlots returns n zeroed slots in memory from manual, and that memory.
func manualSlots[V any](n int) ([]entry[V], manual.Region) {
	mem := manual.New(n * int(unsafe.Sizeof(entry[V]{})))
	b := mem.Bytes()
	return unsafe.Slice((*entry[V])(unsafe.Pointer(&b[0])), n), mem
}

// Bytes is the memory the table's slots take now.
func (t *Table[V]) Bytes() int { return len(t.slots) * int(unsafe.Sizeof(entry[V]{})) }

// Free releases the memory of a table from NewManual; the
// table is empty and must not be used afterwards. A second Free does
// nothing.
func (t *Table[V]) Free() {
	t.mem.Free()
	t.slots, t.n = nil, 0
}
