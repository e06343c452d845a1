package trie

import (
	"github.com/hexstate/hexstate/vertex"
)

// RangeCursor reads ranges of vertex records as Backend.VertexRange does,
// cheaply when successive reads move forward. It is an alias of an unnamed
// interface type, as rocks.RangeCursor is, so that a backend outside this
// package can offer the capability (see CursorBackend) without importing it.
type RangeCursor = interface {
	// VertexRange calls fn in ascending ID order for every record whose ID
	// lies in [first, first+n); rec is only valid during the call.
	VertexRange(first vertex.ID, n int, fn func(id vertex.ID, rec []byte) error) error
	// Close releases the cursor.
	Close()
}

// CursorBackend is an optional capability of a Backend: cursors whose
// successive reads are cheaper than separate VertexRange calls. CopyFrom
// reads its source through one cursor per depth of its walk (each depth's
// reads move forward through the source's IDs in a builder-made store) when
// the source's backend has it.
type CursorBackend interface {
	NewRangeCursor() (RangeCursor, error)
}

// cursor returns depth d's cursor, opening it, or nil when the source has
// none.
func (c *copier) cursor(d int) RangeCursor {
	L := c.level(d)
	if L.cur == nil && c.cursors != nil {
		cur, err := c.cursors.NewRangeCursor()
		if err != nil {
			c.cursors = nil // not available after all: read without
		} else {
			L.cur = cur
		}
	}
	return L.cur
}

// srcRange reads the source's records in [first, first+n) for depth d of the
// walk: through that depth's cursor when the source's backend has cursors
// (and opens one), else with VertexRange.
func (c *copier) srcRange(d int, first vertex.ID, n int, fn func(vertex.ID, []byte) error) error {
	if cur := c.cursor(d); cur != nil {
		return cur.VertexRange(first, n, fn)
	}
	return c.src.backend.VertexRange(first, n, fn)
}

// srcVertex appends the source's record of id, read for depth d of the walk,
// to dst; found is false when there is none.
func (c *copier) srcVertex(d int, id vertex.ID, dst []byte) (rec []byte, found bool, err error) {
	err = c.srcRange(d, id, 1, func(_ vertex.ID, r []byte) error {
		dst, found = append(dst, r...), true
		return nil
	})
	return dst, found, err
}

// closeCursors releases the walk's cursors.
func (c *copier) closeCursors() {
	for _, L := range c.levels {
		if L.cur != nil {
			L.cur.Close()
			L.cur = nil
		}
	}
}
