package framestore

import "github.com/hexstate/hexstate/vertex"

// ChainIndex maps every vertex ID the stores of a line of frames hold to the
// position (seq) of the newest of those frames that holds it. A read that
// misses its own frame asks the index once and goes straight to the one frame
// that has the vertex, or to the persisted state when no frame has it,
// instead of walking the frames below one by one: with 64 unpersisted
// frames, that walk probed up to 64 per-frame filters and maps, a cache miss
// each (a third of a block's apply time, docs/benchmarks.md §9).
//
// The index is an open-addressed table (linear probing) of IDs with their
// seqs, side by side so that a lookup is one cache miss; it has no pointers,
// so the garbage collector does not scan it. Stores are
// added oldest first, so a later Add overwrites an ID's seq with the newer
// frame's. An ID is only ever added, never removed. The table holds at most
// half as many IDs as it has slots; it doubles when an Add would go beyond.
//
// A ChainIndex is not safe for an Add beside other calls: the trie adds under
// the database's exclusive lock, and reads under its shared lock.
type ChainIndex struct {
	slots []indexSlot
	n     int
}

// indexSlot is one entry of a ChainIndex: an ID (vertex.NoID, never stored,
// marks a free slot) and the seq of the newest frame holding it.
type indexSlot struct {
	id  vertex.ID
	seq uint32
}

// NewChainIndex returns an empty index with room for ids IDs before it grows.
func NewChainIndex(ids int) *ChainIndex {
	slots := 64
	for slots < 2*ids {
		slots *= 2
	}
	return &ChainIndex{slots: make([]indexSlot, slots)}
}

// slot returns the first slot to probe for id.
func (x *ChainIndex) slot(id vertex.ID) int {
	h := uint64(id) * 0x9E3779B97F4A7C15
	return int(h >> 32 & uint64(len(x.slots)-1))
}

// Get returns the seq of the newest frame added that holds id.
func (x *ChainIndex) Get(id vertex.ID) (seq uint32, ok bool) {
	mask := len(x.slots) - 1
	for i := x.slot(id); ; i = (i + 1) & mask {
		switch e := x.slots[i]; e.id {
		case id:
			return e.seq, true
		case vertex.NoID:
			return 0, false
		}
	}
}

// put records id as held by the frame at seq.
func (x *ChainIndex) put(id vertex.ID, seq uint32) {
	mask := len(x.slots) - 1
	for i := x.slot(id); ; i = (i + 1) & mask {
		switch e := &x.slots[i]; e.id {
		case id:
			e.seq = seq
			return
		case vertex.NoID:
			*e = indexSlot{id: id, seq: seq}
			x.n++
			return
		}
	}
}

// grow makes room for n more IDs.
func (x *ChainIndex) grow(n int) {
	if 2*(x.n+n) <= len(x.slots) {
		return
	}
	bigger := NewChainIndex(2 * (x.n + n))
	for _, e := range x.slots {
		if e.id != vertex.NoID {
			bigger.put(e.id, e.seq)
		}
	}
	*x = *bigger
}

// Len is the number of IDs in the index.
func (x *ChainIndex) Len() int { return x.n }

// Slots is the size of the index's table: it holds up to half as many IDs.
func (x *ChainIndex) Slots() int { return len(x.slots) }

// Add records every vertex s holds (its older IDs, deletions included, and
// its fresh vertices) as held by the frame at seq, which must be newer than
// every frame added before.
func Add[V any](x *ChainIndex, s *Store[V], seq uint32) {
	x.grow(s.Len())
	for id := range s.old {
		x.put(id, seq)
	}
	for i, v := range s.fresh {
		if v != nil {
			x.put(s.first+vertex.ID(i), seq)
		}
	}
}
