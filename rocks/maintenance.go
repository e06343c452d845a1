package rocks

import "github.com/linxGnu/grocksdb"

// Compact flushes the memtables and compacts every key of both column families
// down to the bottommost level, rewriting the bottommost files too, so that a
// benchmark can measure a fully compacted database. It blocks until done.
func (s *Store) Compact() error {
	if err := s.acquireWritable(); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	if err := s.flush(); err != nil {
		return err
	}
	co := grocksdb.NewCompactRangeOptions()
	defer co.Destroy()
	co.SetBottommostLevelCompaction(grocksdb.KForceOptimized)
	co.SetExclusiveManualCompaction(true)
	for _, cf := range []*grocksdb.ColumnFamilyHandle{s.cfVertex, s.cfAdmin} {
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
