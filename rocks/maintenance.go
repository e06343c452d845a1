package rocks

import "github.com/linxGnu/grocksdb"

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
	co := grocksdb.NewCompactRangeOptions()
	defer co.Destroy()
	co.SetBottommostLevelCompaction(bottom)
	co.SetExclusiveManualCompaction(true)
	for _, cf := range s.handles() {
		s.db.CompactRangeCFOpt(cf, grocksdb.Range{}, co)
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
