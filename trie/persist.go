package trie

import (
	"fmt"
	"slices"

	"github.com/hexstate/hexstate/vertex"
)

// Persist writes tx and its unpersisted ancestors to the backend in one atomic
// batch (every changed vertex with its hash key, every deletion, and the admin
// record with the new root, block and allocator top) and makes tx the new base.
// Frames on forks that do not descend from tx answer ErrStale from then on;
// frames begun on tx carry on. tx itself is sealed.
//
// If the write fails nothing changes: the frames and the base stay as they were.
func (db *DB) Persist(tx *Tx, block uint64) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if err := tx.check(false); err != nil {
		return err
	}
	var chain []*Tx // tx first, down to (not including) the base
	for f := tx; f != db.base; f = f.parent {
		if f == nil {
			return ErrStale // tx does not descend from the current base
		}
		chain = append(chain, f)
	}
	if len(chain) == 0 { // tx is the base already: a repeated Persist
		if block == db.block {
			return nil
		}
		return fmt.Errorf("trie: persist block %d: the frame is already persisted as block %d", block, db.block)
	}
	root, err := tx.hash()
	if err != nil {
		return fmt.Errorf("trie: persist: hashing: %w", err)
	}
	merged := make(map[vertex.ID]*vertex.Vertex)
	for i := len(chain) - 1; i >= 0; i-- {
		chain[i].vtx.each(func(id vertex.ID, v *vertex.Vertex) { merged[id] = v })
	}
	a := admin{format: db.format, top: tx.alloc.Top, block: block, root: root}
	batch := vertex.Batch{Admin: a.encode()}
	// Records go to the store in ID order: RocksDB's memtable takes sorted
	// inserts about a third faster than random ones, and the encode buffer is
	// then written front to back.
	ids := make([]vertex.ID, 0, len(merged))
	size := 0
	for id, v := range merged {
		ids = append(ids, id)
		if v != nil {
			size += 64 + len(v.Path) + len(v.Value)
		}
	}
	slices.Sort(ids)
	buf := make([]byte, 0, size)
	for _, id := range ids {
		v := merged[id]
		if v == nil {
			batch.Deletes = append(batch.Deletes, id)
			continue
		}
		if db.noChild && v.ChildKeys != nil {
			c := *v
			c.ChildKeys = nil
			v = &c
		}
		start := len(buf)
		buf = vertex.Encode(buf, v)
		batch.Puts = append(batch.Puts, vertex.Record{ID: id, Rec: buf[start:len(buf):len(buf)]})
	}
	if err := db.backend.Write(&batch); err != nil {
		return fmt.Errorf("trie: persist block %d: %w", block, err)
	}
	// The store now holds the new state: refresh the cache in place (keeping its
	// capacity and every untouched entry) and move the base up to tx.
	for _, r := range batch.Puts {
		db.cache.put(r.ID, r.Rec)
	}
	for _, id := range batch.Deletes {
		db.cache.remove(id)
	}
	for _, f := range chain[1:] {
		f.state, f.vtx = folded, frameStore{}
	}
	db.base.state = folded
	tx.parent, tx.vtx, tx.sealed = nil, newFrameStore(^vertex.ID(0)), true
	db.base, db.block, db.root = tx, block, root
	return nil
}
