package trie

import (
	"bytes"
	"sync"

	"github.com/hexstate/hexstate/vertex"
)

// leafCache holds leaf-index values that PrefetchReads read ahead of the
// reads that need them (read_cold.go consults it before the backend). A
// value describes the state the backend held when it was read; a write that
// lands drops the values of the keys it changed (DB.write, before the
// pending write is dropped: until then the reads of those keys stop at its
// vertices and never get here). A prefetch reads only keys whose paths lie
// outside the frames and the pending write, which that pending write's
// landing does not change, and no other write can start while it runs (it
// holds the database's read lock): so what it adds is current.
type leafCache struct {
	mu   sync.Mutex
	vals map[string][]byte // nil value: the key has no entry
}

// leafCacheMax bounds the entries held; a fill beyond it starts afresh.
const leafCacheMax = 1 << 16

// get returns key's value and whether the cache holds it.
func (c *leafCache) get(key []byte) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.vals[string(key)]
	return v, ok
}

// fill adds values read from the backend.
func (c *leafCache) fill(keys, vals [][]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.vals == nil || len(c.vals)+len(keys) > leafCacheMax {
		c.vals = make(map[string][]byte, len(keys))
	}
	for i, k := range keys {
		c.vals[string(k)] = vals[i]
	}
}

// landed drops what batch b changes in the index (everything, for nil or a
// reset).
func (c *leafCache) landed(b *vertex.Batch) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b == nil || b.LeafReset {
		c.vals = nil
		return
	}
	for _, l := range b.Leaves {
		delete(c.vals, string(l.Key))
	}
	for _, p := range b.LeafPrefixDeletes {
		for k := range c.vals {
			if len(k) == 2*len(p) && bytes.HasPrefix([]byte(k), p) {
				delete(c.vals, k)
			}
		}
	}
}
