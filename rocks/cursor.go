package rocks

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"sync"
	"unsafe"

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
// records ahead, and seeks otherwise; and it copies the whole range into a
// buffer in one call into RocksDB (cursor_native.go) instead of four cgo
// calls per record. It counts one range read per VertexRange and one record
// per record returned, as Store.VertexRange does.
//
// A Cursor is not safe for concurrent use. It sees the store as it was when
// it was made (RocksDB pins that version): it is meant for a store nobody
// writes to meanwhile, such as a migration's read-only source.
type Cursor struct {
	s   *Store
	ro  *grocksdb.ReadOptions
	it  *grocksdb.Iterator
	nat unsafe.Pointer // it's rocksdb_iterator_t
	// the rocksdb_t, rocksdb_column_family_handle_t and rocksdb_readoptions_t
	// of Vertices' MultiGet
	natDB, natCF, natRO unsafe.Pointer
	ids                 []uint64 // Vertices' IDs
	buf                 []byte   // the records of the last native read
	once                sync.Once
}

// ErrNoCursor is returned by NewCursor when the RocksDB binding does not
// expose what the cursor needs; callers fall back to Store.VertexRange.
var ErrNoCursor = errors.New("rocks: range cursor unavailable")

// cursorBuf is the size of a cursor's buffer at first; it grows to hold a
// record larger than it.
const cursorBuf = 64 << 10

// NewCursor opens a Cursor on s; the caller closes it before s.
func (s *Store) NewCursor() (*Cursor, error) {
	if err := s.acquire(); err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	ro := grocksdb.NewDefaultReadOptions()
	it := s.db.NewIteratorCF(ro, s.cfVertex)
	c := &Cursor{s: s, ro: ro, it: it, buf: make([]byte, cursorBuf)}
	var ok bool
	if c.nat, ok = nativeHandle(it); !ok {
		it.Close()
		ro.Destroy()
		return nil, ErrNoCursor
	}
	return c, nil
}

// NewRangeCursor is NewCursor as the RangeCursor capability trie looks for.
func (s *Store) NewRangeCursor() (RangeCursor, error) {
	c, err := s.NewCursor()
	if err != nil {
		return nil, err
	}
	return c, nil
}

// nativeHandle returns the RocksDB C object behind a grocksdb object (such
// as a *grocksdb.Iterator): grocksdb keeps it in the unexported pointer
// field c. ok is false if that ever changes.
func nativeHandle(obj any) (unsafe.Pointer, bool) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil, false
	}
	f := v.Elem().FieldByName("c")
	if !f.IsValid() || f.Kind() != reflect.Pointer {
		return nil, false
	}
	p := f.UnsafePointer()
	return p, p != nil
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
	from := uint64(first)
	for {
		r := c.read(from, last)
		if r.status == readBadKey {
			return fmt.Errorf("%w: key of %d bytes in column family %q", ErrCorruptKey, r.badLen, cfVertices)
		}
		if r.status == readError {
			if err := c.it.Err(); err != nil {
				return fmt.Errorf("rocks: read vertices [%d, %d]: %w", first, last, err)
			}
			return fmt.Errorf("rocks: read vertices [%d, %d]: iterator failed", first, last)
		}
		if err := c.each(r.used, fn); err != nil {
			return err
		}
		if r.status != readFull {
			return nil
		}
		if r.used == 0 { // a record larger than the buffer
			c.buf = make([]byte, 2*len(c.buf)+r.need)
		}
		from = r.next
	}
}

// each hands the records of the last read, the first used bytes of c.buf,
// to fn.
func (c *Cursor) each(used int, fn func(id vertex.ID, rec []byte) error) error {
	b := c.buf[:used]
	n := uint64(0)
	defer func() { c.s.records.Add(n) }()
	for len(b) > 0 {
		id, l := decodeCursorHeader(b)
		rec := b[cursorHeader : cursorHeader+l : cursorHeader+l]
		b = b[cursorHeader+l:]
		n++
		if err := fn(id, rec); err != nil {
			return err
		}
	}
	return nil
}

// Close releases the cursor's iterator; a second Close does nothing. It must
// be called before the store's Close.
func (c *Cursor) Close() {
	c.once.Do(func() {
		c.s.mu.RLock()
		defer c.s.mu.RUnlock()
		if c.it != nil && !c.s.closed {
			c.it.Close()
			c.ro.Destroy()
		}
		c.it, c.nat = nil, nil
	})
}
