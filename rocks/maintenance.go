package rocks

import (
	"slices"

	"github.com/linxGnu/grocksdb"
)

// Compact flushes the memtables and compacts every key of both column families
// down to the bottommost level, rewriting the bottommost files too, so that a
// benchmark can measure a fully compacted database. It blocks until done.
func (s *Store) Compact() error { return s.compact(grocksdb.KForceOptimized) }

// CompactBuilt flushes the memtables and compacts every key of both column
// families down to the bottommost level, leaving the files already there as
// they are unless keys from above overlap them: the store a build (trie's
// StateLoader, bulk load, copy) leaves is then in its final shape — every
// record in sorted, non-overlapping files at one level, nothing in level 0 —
// without rewriting what background compactions already put at the bottom.
// It blocks until done; it is how rocks.Store implements trie.Compactor.
func (s *Store) CompactBuilt() error { return s.compact(grocksdb.KSkip) }

// compact is Compact with the bottommost level's treatment.
func (s *Store) compact(bottom grocksdb.BottommostLevelCompaction) error {
	if err := s.acquireWritable(); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	if err := s.flush(); err != nil {
		return err
	}
	// The small families first. A copy's leaf index holds no entry, only
	// the range tombstones that emptied it, until trie.DB.CopyLeafIndex fills
	// it beside the vertices' long compaction; a trivial move would keep
	// those tombstones at the bottom level, and every file the index build
	// ingests (rocks/ingest.go) would land above them, in level 0. Rewritten
	// (the bottommost level forced), they are dropped.
	cfs := s.handles()
	slices.Reverse(cfs)
	for _, cf := range cfs {
		co := grocksdb.NewCompactRangeOptions()
		b := bottom
		if cf == s.cfLeaves && !s.holdsKeyIn(cf, nil, leafSpan) {
			b = grocksdb.KForce
		}
		co.SetBottommostLevelCompaction(b)
		co.SetExclusiveManualCompaction(true)
		s.db.CompactRangeCFOpt(cf, grocksdb.Range{}, co)
		co.Destroy()
	}
	s.ranges.invalidate() // let the replaced files go
	return nil
}

// Flush writes the memtables of both column families to SST files and waits.
func (s *Store) Flush() error {
	if err := s.acquireWritable(); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	err := s.flush()
	s.ranges.invalidate() // let the flushed memtables go
	return err
}

// Property returns the value of a RocksDB property of the vertices column
// family (for example "rocksdb.estimate-num-keys" or "rocksdb.stats"), "" when
// RocksDB does not know it.
func (s *Store) Property(name string) (string, error) {
	if err := s.acquire(); err != nil {
		return "", err
	}
	defer s.mu.RUnlock()
	return s.db.GetPropertyCF(name, s.cfVertex), nil
}
