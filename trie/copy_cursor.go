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
// reads its source through a few of them when the source's backend has it
// (see cursorPool).
type CursorBackend interface {
	NewRangeCursor() (RangeCursor, error)
}

// copyCursors is how many cursors a copy reads its source through, and
// copyStep how far (in IDs) past a cursor's last read a read may start and
// still be served by it without a seek: rocks' cursor steps over at most 16
// records rather than seeking (rocks/cursor_native.go).
const (
	copyCursors = 32
	copyStep    = 16
)

// cursorPool holds the cursors a copy reads its source through. The walk's
// reads form several streams, each moving forward through the source's IDs
// in a builder-made store: a branch's children lie after the sub-tries of
// the children before them, at every depth, and an account's storage trie
// lies beside the account's leaf. Each read goes to the cursor whose last
// read ends just before it (a step forward, no seek), else to a new cursor
// while there are fewer than copyCursors, else to the one used least
// recently (a seek). The streams thus keep their own cursors, whichever
// depth of the walk (account trie or storage trie) they belong to.
type cursorPool struct {
	src   CursorBackend // nil: the source has no cursors
	curs  []pooledCursor
	clock uint64
}

type pooledCursor struct {
	cur  RangeCursor
	last vertex.ID // the last ID of its last read
	used uint64    // clock at its last read
}

// pick returns the cursor to read from first on, opening one when the pool
// is not full, or nil when the source has no cursors.
func (p *cursorPool) pick(first vertex.ID, n int) RangeCursor {
	if p.src == nil {
		return nil
	}
	p.clock++
	best, lru := -1, -1
	for i := range p.curs {
		c := &p.curs[i]
		if c.last <= first && first-c.last <= copyStep && (best < 0 || c.last > p.curs[best].last) {
			best = i
		}
		if lru < 0 || c.used < p.curs[lru].used {
			lru = i
		}
	}
	if best < 0 && len(p.curs) < copyCursors {
		cur, err := p.src.NewRangeCursor()
		if err != nil {
			if len(p.curs) == 0 {
				p.src = nil // not available after all: read without
				return nil
			}
		} else {
			p.curs = append(p.curs, pooledCursor{cur: cur})
			best = len(p.curs) - 1
		}
	}
	if best < 0 {
		best = lru
	}
	c := &p.curs[best]
	c.last, c.used = first+vertex.ID(max(n, 1))-1, p.clock
	return c.cur
}

// close releases the pool's cursors.
func (p *cursorPool) close() {
	for _, c := range p.curs {
		c.cur.Close()
	}
	p.curs = nil
}

// copySource reads a copy's source, through a pool of cursors when its
// backend has them. Cursors are not safe for concurrent use: each goroutine
// reading the source has a copySource of its own.
type copySource struct {
	backend Backend
	cursors cursorPool
	table   *rangeTable  // when set, serves the reads it covers
	preload *copyPreload // when set, serves the reads it covers
}

// newCopySource reads b, through cursors when useCursors is set and b has
// them.
func newCopySource(b Backend, useCursors bool) copySource {
	s := copySource{backend: b}
	if useCursors {
		s.cursors.src, _ = b.(CursorBackend)
	}
	return s
}

// srcRange reads the source's records in [first, first+n): from the
// preload or the range table when it covers them, else through one of the
// pool's cursors when the source's backend has cursors, else with
// VertexRange.
func (s *copySource) srcRange(first vertex.ID, n int, fn func(vertex.ID, []byte) error) error {
	if s.preload != nil {
		if t := s.preload.find(first, n); t != nil {
			return t.each(first, n, fn)
		}
	}
	if t := s.table; t != nil && t.covers(first, n) {
		return t.each(first, n, fn)
	}
	if cur := s.cursors.pick(first, n); cur != nil {
		return cur.VertexRange(first, n, fn)
	}
	return s.backend.VertexRange(first, n, fn)
}

// srcVertex appends the source's record of id to dst; found is false when
// there is none.
func (s *copySource) srcVertex(id vertex.ID, dst []byte) (rec []byte, found bool, err error) {
	err = s.srcRange(id, 1, func(_ vertex.ID, r []byte) error {
		dst, found = append(dst, r...), true
		return nil
	})
	return dst, found, err
}
