package trie

import (
	"sync"
)

// leafCache holds leaf-index values that Prefetch read ahead of the reads
// that need them (read_cold.go consults it before the backend). Its values
// describe the state the backend held when they were read, so every write
// that lands empties it (DB.write, before the pending write is dropped:
// until then the reads of the keys it changed stop at its vertices and never
// get here); a prefetch that read across a landing write keeps nothing
// (gen).
type leafCache struct {
	mu   sync.Mutex
	gen  uint64
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

// generation returns the generation to pass to fill.
func (c *leafCache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// fill adds values read since generation gen, unless a write landed since.
func (c *leafCache) fill(gen uint64, keys, vals [][]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if c.vals == nil || len(c.vals)+len(keys) > leafCacheMax {
		c.vals = make(map[string][]byte, len(keys))
	}
	for i, k := range keys {
		c.vals[string(k)] = vals[i]
	}
}

// invalidate empties the cache: a write is landing.
func (c *leafCache) invalidate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.vals = nil
}
