package main

import (
	"github.com/hexstate/hexstate/hashkey"
)

// scaleSide is one implementation in the scale workload. Build streams the
// initial state from the sorted index into an empty store; the block methods
// are the timed phases of a block, as in side.
type scaleSide interface {
	Name() string
	// Build loads the state (accounts in trie order from idx) and persists it as
	// block 0, returning its root.
	Build(idx *indexReader) (hashkey.Hash, error)
	// Open continues on a built store whose last persisted block is block,
	// with state root root.
	Open(block uint64, root hashkey.Hash) error
	Apply(b *scaleBlock) (readDigest, error) // reads, then writes
	Root() (hashkey.Hash, error)
	Persist(block uint64, commit bool) error
	// Stats returns counters since the last call (nil entries omitted).
	Stats() map[string]uint64
	Close() error
}
