package rocks

import (
	"fmt"
	"slices"

	"github.com/hexstate/hexstate/vertex"
	"github.com/linxGnu/grocksdb"
)

// The leaf index's column family (docs/format.md §7): trie.Backend's Leaf,
// Leaves and EachLeaf, and the index part of a write batch.

// storeCFs returns the column families to open dir with: all of them, except
// for a read-only open of a store written before the leaf index existed. A
// read-write open of such a store creates the missing one, empty.
func storeCFs(dir string, create, readOnly bool, native *nativeOptions) ([]string, error) {
	if create {
		return cfNames, nil
	}
	lo := grocksdb.NewDefaultOptions()
	present, err := grocksdb.ListColumnFamilies(lo, dir)
	lo.Destroy()
	if err != nil {
		return nil, fmt.Errorf("rocks: open %q: listing column families: %w", dir, err)
	}
	if slices.Contains(present, cfLeaves) {
		return cfNames, nil
	}
	if readOnly {
		return cfNamesNoLeaves, nil
	}
	native.db.SetCreateIfMissingColumnFamilies(true)
	return cfNames, nil
}

// leavesHandle returns the leaf index's handle among cfs (opened in cfNames
// order), nil when it was not opened.
func leavesHandle(cfs []*grocksdb.ColumnFamilyHandle) *grocksdb.ColumnFamilyHandle {
	if len(cfs) > 2 {
		return cfs[2]
	}
	return nil
}

// handles returns the store's open column families.
func (s *Store) handles() []*grocksdb.ColumnFamilyHandle {
	h := []*grocksdb.ColumnFamilyHandle{s.cfVertex, s.cfAdmin}
	if s.cfLeaves != nil {
		h = append(h, s.cfLeaves)
	}
	return h
}

// Leaf returns the value of key in the leaf index, or (nil, nil) when there
// is none (also in a read-only store written without the index). It counts
// one leaf read.
func (s *Store) Leaf(key []byte) ([]byte, error) {
	if err := s.acquire(); err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	s.leafReads.Add(1)
	if s.cfLeaves == nil {
		return nil, nil
	}
	h, err := s.db.GetPinnedCF(s.ro, s.cfLeaves, key)
	if err != nil {
		return nil, fmt.Errorf("rocks: read leaf %x: %w", key, err)
	}
	defer h.Destroy()
	if !h.Exists() {
		return nil, nil
	}
	return slices.Clone(h.Data()), nil
}

// Leaves looks keys up with one MultiGet and calls fn for each in order
// (val nil when absent, valid only during the call). It counts one leaf read
// per key.
func (s *Store) Leaves(keys [][]byte, fn func(i int, val []byte) error) error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	s.leafReads.Add(uint64(len(keys)))
	if len(keys) == 0 {
		return nil
	}
	if s.cfLeaves == nil {
		for i := range keys {
			if err := fn(i, nil); err != nil {
				return err
			}
		}
		return nil
	}
	vals, err := s.db.MultiGetCF(s.ro, s.cfLeaves, keys...)
	if err != nil {
		return fmt.Errorf("rocks: read %d leaves: %w", len(keys), err)
	}
	defer vals.Destroy()
	for i, v := range vals {
		var val []byte
		if v.Exists() {
			val = v.Data()
			if val == nil {
				val = []byte{}
			}
		}
		if err := fn(i, val); err != nil {
			return err
		}
	}
	return nil
}

// EachLeaf calls fn in ascending key order for every leaf-index entry whose
// key is at least start.
func (s *Store) EachLeaf(start []byte, fn func(key, val []byte) error) error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	if s.cfLeaves == nil {
		return nil
	}
	ro := grocksdb.NewDefaultReadOptions()
	defer ro.Destroy()
	ro.SetFillCache(false)
	it := s.db.NewIteratorCF(ro, s.cfLeaves)
	defer it.Close()
	it.Seek(start)
	if err := scanKV(it, fn); err != nil {
		return err
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("rocks: iterating the leaf index: %w", err)
	}
	return nil
}

// leafSpan is the end of the key range of the leaf index: every key is
// shorter than it or sorts below it (keys are at most 64 bytes).
var leafSpan = slices.Repeat([]byte{0xff}, 65)

// leafFill adds a batch's leaf-index changes to batch representations, in
// the order Batch specifies, a part at a time: first the index's reset and
// deleted prefixes (all in the first part), then the leaves.
type leafFill struct {
	b     *vertex.Batch
	cf    uint32 // the column family the records name (0: the default)
	next  int    // b.Leaves[next] is the first leaf not added
	begun bool   // the reset and the deleted prefixes are added
}

// fill adds the next changes to r until r holds limit bytes or more, and
// reports whether changes remain.
func (f *leafFill) fill(r *batchRep, limit int) bool {
	b := f.b
	if !f.begun {
		f.begun = true
		if b.LeafReset {
			r.delRange(f.cf, nil, leafSpan)
		}
		for _, p := range b.LeafPrefixDeletes {
			// The 64-byte keys starting with p lie in [p 00, p ff*33).
			r.delRange(f.cf, append(slices.Clip(p), 0), append(slices.Clip(p), leafSpan[:33]...))
		}
	}
	for ; f.next < len(b.Leaves) && len(r.buf) < limit; f.next++ {
		if l := b.Leaves[f.next]; l.Val == nil {
			r.del(f.cf, l.Key)
		} else {
			r.put(f.cf, l.Key, l.Val)
		}
	}
	return f.next < len(b.Leaves)
}
