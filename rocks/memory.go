package rocks

import "github.com/linxGnu/grocksdb"

// MemoryUsage is what RocksDB holds in memory for a store, by RocksDB's own
// accounting (its memory properties), in bytes: what a client adds to the
// Go heap and trie.OffHeapBytes to see where the process's memory is.
// glibc's free lists (see LimitMallocArenas) come on top.
type MemoryUsage struct {
	BlockCache   uint64 // blocks in the block cache, pinned ones included
	Memtables    uint64 // every column family's memtables, active and immutable
	TableReaders uint64 // the open SST files' readers outside the block cache
}

// Total is the sum of the three.
func (m MemoryUsage) Total() uint64 { return m.BlockCache + m.Memtables + m.TableReaders }

// MemoryUsage reports what RocksDB holds in memory now. It reads a few
// properties under RocksDB's locks: cheap enough once per block.
func (s *Store) MemoryUsage() (MemoryUsage, error) {
	if err := s.acquire(); err != nil {
		return MemoryUsage{}, err
	}
	defer s.mu.RUnlock()
	var m MemoryUsage
	m.BlockCache, _ = s.db.GetIntProperty("rocksdb.block-cache-usage")
	for _, cf := range []*grocksdb.ColumnFamilyHandle{s.cfAdmin, s.cfVertex, s.cfLeaves} {
		if cf == nil {
			continue
		}
		mt, _ := s.db.GetIntPropertyCF("rocksdb.cur-size-all-mem-tables", cf)
		tr, _ := s.db.GetIntPropertyCF("rocksdb.estimate-table-readers-mem", cf)
		m.Memtables += mt
		m.TableReaders += tr
	}
	return m, nil
}
