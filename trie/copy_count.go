package trie

import (
	"fmt"

	"github.com/hexstate/hexstate/vertex"
)

// RecordCount counts the vertex records db's backend holds at IDs up to the
// allocator's top, in one range read. After a CopyFrom into an empty store
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
	err := db.backend.VertexRange(vertex.RootID, int(top), func(vertex.ID, []byte) error {
		n++
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("trie: counting records: %w", err)
	}
	return n, nil
}
