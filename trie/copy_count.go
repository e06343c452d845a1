package trie

import (
	"fmt"

	"github.com/hexstate/hexstate/vertex"
)

// RecordCount counts the vertex records db's backend holds at IDs up to the
// allocator's top, in one range read (through a cursor when the backend has
// them: CursorBackend). After a CopyFrom into an empty store
// it is the number of vertices copied; a store grown by persists also holds
// the records of replaced vertices.
func (db *DB) RecordCount() (uint64, error) {
	db.mu.RLock()
	if db.closed {
		db.mu.RUnlock()
		return 0, ErrClosed
	}
	top := db.base.alloc.Top
	db.mu.RUnlock()
	var n uint64
	count := func(vertex.ID, []byte) error {
		n++
		return nil
	}
	var err error
	if cb, ok := db.backend.(CursorBackend); ok {
		var cur RangeCursor
		if cur, err = cb.NewRangeCursor(); err == nil {
			err = cur.VertexRange(vertex.RootID, int(top), count)
			cur.Close()
		}
	} else {
		err = db.backend.VertexRange(vertex.RootID, int(top), count)
	}
	if err != nil {
		return 0, fmt.Errorf("trie: counting records: %w", err)
	}
	return n, nil
}
