package trie

import (
	"sync"
	"sync/atomic"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/vertex"
)

// vertexCache holds decoded persisted vertices (with their hash keys, including the
// keys of leaves and small branches that records do not store), bounded in bytes.
//
// It is never emptied by a persist: persisted vertices replace their old versions
// in place and deleted ones are dropped, so a flush keeps both the cache's
// capacity and its warm entries. Eviction is CLOCK (second chance) per shard, which
// approximates LRU without a list to update on every hit.
type vertexCache struct {
	shards [cacheShards]cacheShard
	hits   atomic.Uint64
	misses atomic.Uint64
}

const cacheShards = 16

type cacheShard struct {
	mu     sync.Mutex
	m      map[vertex.ID]*cacheEntry
	ring   []vertex.ID // clock ring of cached IDs
	hand   int
	bytes  int
	budget int
}

type cacheEntry struct {
	v    *vertex.Vertex
	slot int  // index in ring
	ref  bool // touched since the hand last passed
}

// CacheStats reports the vertex cache's use.
type CacheStats struct {
	Hits, Misses uint64
	Entries      int
	Bytes        int // estimated bytes held
	Budget       int // the configured bound
}

func newVertexCache(budget int) *vertexCache {
	c := &vertexCache{}
	for i := range c.shards {
		c.shards[i] = cacheShard{m: make(map[vertex.ID]*cacheEntry), budget: budget / cacheShards}
	}
	return c
}

func (c *vertexCache) shard(id vertex.ID) *cacheShard {
	return &c.shards[(uint64(id)*0x9E3779B97F4A7C15)>>60]
}

func (c *vertexCache) get(id vertex.ID) *vertex.Vertex {
	s := c.shard(id)
	s.mu.Lock()
	e := s.m[id]
	if e != nil {
		e.ref = true
	}
	s.mu.Unlock()
	if e == nil {
		c.misses.Add(1)
		return nil
	}
	c.hits.Add(1)
	return e.v
}

// contains reports whether id is cached, without counting a hit or a miss.
func (c *vertexCache) contains(id vertex.ID) bool {
	s := c.shard(id)
	s.mu.Lock()
	_, ok := s.m[id]
	s.mu.Unlock()
	return ok
}

// add caches v as the persisted version of id, replacing an older one.
func (c *vertexCache) add(id vertex.ID, v *vertex.Vertex) {
	s := c.shard(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.m[id]; e != nil {
		s.drop(id, e) // replaced below, after making room
	}
	size := v.Size()
	if size > s.budget {
		return
	}
	for s.bytes+size > s.budget && len(s.ring) > 0 {
		s.evictOne()
	}
	s.m[id] = &cacheEntry{v: v, slot: len(s.ring)}
	s.ring = append(s.ring, id)
	s.bytes += size
}

// setKey caches key k (and for a branch its children's keys) for the persisted
// vertex v at id; the cached vertex is replaced by a copy, since readers may hold v.
func (c *vertexCache) setKey(id vertex.ID, v *vertex.Vertex, k hashkey.Key, kids vertex.ChildKeys) {
	cp := *v
	cp.Key, cp.Stale = k, 0
	if kids != nil {
		cp.ChildKeys = append(vertex.ChildKeys(nil), kids...) // not the hasher's arena
	}
	c.add(id, &cp)
}

// detach returns a copy of a persisted frame vertex that shares no memory with
// the frame: frame vertices live in slabs and arenas (newVertex, nibbles), and a
// cached vertex pointing into them would keep whole chunks alive, far past the
// cache's byte budget. Path and value share one allocation.
func detach(v *vertex.Vertex) *vertex.Vertex {
	c := *v
	if n := len(v.Path) + len(v.Value); n > 0 {
		b := make([]byte, 0, n)
		b = append(b, v.Path...)
		b = append(b, v.Value...)
		c.Path, c.Value = b[:len(v.Path):len(v.Path)], b[len(v.Path):]
		if v.Path == nil {
			c.Path = nil
		}
		if v.Value == nil {
			c.Value = nil
		}
	}
	if v.Kids != nil {
		k := *v.Kids
		c.Kids = &k
	}
	if v.Acc != nil {
		a := *v.Acc
		c.Acc = &a
	}
	if v.ChildKeys != nil {
		c.ChildKeys = append(vertex.ChildKeys(nil), v.ChildKeys...)
	}
	return &c
}

func (c *vertexCache) remove(id vertex.ID) {
	s := c.shard(id)
	s.mu.Lock()
	if e := s.m[id]; e != nil {
		s.drop(id, e)
	}
	s.mu.Unlock()
}

func (s *cacheShard) evictOne() {
	for {
		if s.hand >= len(s.ring) {
			s.hand = 0
		}
		id := s.ring[s.hand]
		e := s.m[id]
		if e.ref {
			e.ref = false
			s.hand++
			continue
		}
		s.drop(id, e)
		return
	}
}

// drop removes e, moving the ring's last ID into its slot.
func (s *cacheShard) drop(id vertex.ID, e *cacheEntry) {
	last := len(s.ring) - 1
	moved := s.ring[last]
	s.ring[e.slot] = moved
	s.m[moved].slot = e.slot
	s.ring = s.ring[:last]
	delete(s.m, id)
	s.bytes -= e.v.Size()
}

func (c *vertexCache) stats() CacheStats {
	st := CacheStats{Hits: c.hits.Load(), Misses: c.misses.Load()}
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		st.Entries += len(s.m)
		st.Bytes += s.bytes
		st.Budget += s.budget
		s.mu.Unlock()
	}
	return st
}
