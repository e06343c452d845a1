package rocks

import (
	"math"
	"sync"

	"github.com/hexstate/hexstate/vertex"
	"github.com/linxGnu/grocksdb"
)

// RangeCursor reads ranges of vertex records, as Store.VertexRange does. It is
// an alias of an unnamed interface type, as trie.RangeCursor is, so that
// Store.NewRangeCursor satisfies trie's optional cursor capability without
// either package importing the other.
type RangeCursor = interface {
	// VertexRange calls fn in ascending ID order for every record whose ID
	// lies in [first, first+n); rec is only valid during the call.
	VertexRange(first vertex.ID, n int, fn func(id vertex.ID, rec []byte) error) error
	// Close releases the cursor; it must be called before the store's Close.
	Close()
}

// Cursor is a long-lived iterator over the vertices column family for reads
// that move mostly forward, such as one depth of a walk in trie order: a read
// steps forward from where the last one stopped when its first ID is a few
// IDs ahead, and seeks otherwise (cursor_native.go); the range itself is
// copied in one C call, as Store.VertexRange does (scanRange). It counts one
// range read per VertexRange and one record per record returned, as
// Store.VertexRange does.
//
// A Cursor's reads do not fill the block cache: a scan reads each block once,
// and would only evict the blocks other readers use (and make the allocator
// churn through the cache's capacity).
//
// A Cursor is not safe for concurrent use. It sees the store as it was when
// it was made (RocksDB pins that version): it is meant for a store nobody
// writes to meanwhile, such as a migration's read-only source.
type Cursor struct {
	s    *Store
	ro   *grocksdb.ReadOptions
	it   *grocksdb.Iterator
	buf  []byte // scratch of scanRange
	once sync.Once
}

// NewCursor opens a Cursor on s; the caller closes it before s.
func (s *Store) NewCursor() (*Cursor, error) {
	if err := s.acquire(); err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	ro := grocksdb.NewDefaultReadOptions()
	ro.SetFillCache(false)
	return &Cursor{s: s, ro: ro, it: s.db.NewIteratorCF(ro, s.cfVertex)}, nil
}

// NewRangeCursor is NewCursor as the RangeCursor capability trie looks for.
func (s *Store) NewRangeCursor() (RangeCursor, error) {
	c, err := s.NewCursor()
	if err != nil {
		return nil, err
	}
	return c, nil
}

// VertexRange calls fn in ascending ID order for every record whose ID lies
// in [first, first+n) (clamped at the largest ID). rec is only valid during
// the call to fn. An error from fn stops the walk and is returned as is.
func (c *Cursor) VertexRange(first vertex.ID, n int, fn func(id vertex.ID, rec []byte) error) error {
	if err := c.s.acquire(); err != nil {
		return err
	}
	defer c.s.mu.RUnlock()
	if c.it == nil {
		return ErrClosed
	}
	c.s.rangeReads.Add(1)
	if n <= 0 {
		return nil
	}
	last := uint64(first) + uint64(n) - 1
	if last < uint64(first) {
		last = math.MaxUint64
	}
	c.position(uint64(first))
	var got int
	var err error
	c.buf, got, err = scanRange(c.it, nil, vertex.ID(last), c.buf, fn)
	c.s.records.Add(uint64(got))
	return err
}

// Close releases the cursor's iterator; a second Close does nothing. It must
// be called before the store's Close (after it, the iterator is left alone:
// RocksDB must not free it once the database is gone).
func (c *Cursor) Close() {
	c.once.Do(func() {
		c.s.mu.RLock()
		defer c.s.mu.RUnlock()
		if c.it != nil && !c.s.closed {
			c.it.Close()
			c.ro.Destroy()
		}
		c.it = nil
	})
}
