package framestore

import (
	"sync/atomic"

	"github.com/hexstate/hexstate/vertex"
)

// ChainFilter is a Bloom filter (16 bits per ID, two probes, as a Store's own)
// over the older IDs (those in the map, below the first fresh ID) of the
// stores of a chain of frames. A read that misses a frame's own store asks
// the filter of the frames below it once, instead of asking each of them in
// turn: with 64 unpersisted frames, a read of a persisted vertex probed 64
// filters spread over megabytes, a cache miss each.
//
// Frames only ever add to a chain, and a filter answers "maybe" for a superset
// of what it was given, so one filter is shared by a whole line of frames:
// each new frame adds its parent's IDs and keeps a pointer to it. A frame's
// filter thus also holds the IDs of frames above it (and of forks): false
// positives, which the walk down the chain resolves. Bits are set atomically,
// so that reads may run beside an add.
type ChainFilter struct {
	words []atomic.Uint64 // len a power of two
	added atomic.Int64    // IDs added, repeats included
}

// NewChainFilter returns an empty filter with room for ids IDs.
func NewChainFilter(ids int) *ChainFilter {
	w := 64
	for w*64 < 16*ids {
		w *= 2
	}
	return &ChainFilter{words: make([]atomic.Uint64, w)}
}

// MayHold reports whether id may have been added (false for a nil filter).
func (f *ChainFilter) MayHold(id vertex.ID) bool {
	if f == nil {
		return false
	}
	a, b := filterProbes(id, uint64(len(f.words))*64-1)
	return f.words[a/64].Load()&(1<<(a%64)) != 0 && f.words[b/64].Load()&(1<<(b%64)) != 0
}

// AddOlder adds the older IDs of s to f and reports true, or reports false
// and adds nothing when f has no room for them (the caller builds a larger
// filter).
func AddOlder[V any](f *ChainFilter, s *Store[V]) bool {
	n := int64(len(s.old))
	if 16*(f.added.Load()+n) > int64(len(f.words))*64 {
		return false
	}
	mask := uint64(len(f.words))*64 - 1
	for id := range s.old {
		a, b := filterProbes(id, mask)
		f.words[a/64].Or(1 << (a % 64))
		f.words[b/64].Or(1 << (b % 64))
	}
	f.added.Add(n)
	return true
}

// Bits is the filter's size in bits.
func (f *ChainFilter) Bits() int { return 64 * len(f.words) }

// Added is the number of IDs added to f (repeats included).
func (f *ChainFilter) Added() int { return int(f.added.Load()) }

// Older is the number of older IDs s holds (its map's size).
func (s *Store[V]) Older() int { return len(s.old) }
