package rocks

import (
	"strconv"
	"strings"
)

// RocksDB ticker names that BlockStats reads (RocksDB 7.x).
const (
	tickerDataMiss      = "rocksdb.block.cache.data.miss"
	tickerDataHit       = "rocksdb.block.cache.data.hit"
	tickerDataBytes     = "rocksdb.block.cache.data.bytes.insert"
	tickerIndexMiss     = "rocksdb.block.cache.index.miss"
	tickerFilterMiss    = "rocksdb.block.cache.filter.miss"
	tickerLastLevelRd   = "rocksdb.last.level.read.bytes"
	tickerNonLastLvlRd  = "rocksdb.non.last.level.read.bytes"
	tickerLastLevelCnt  = "rocksdb.last.level.read.count"
	tickerNonLastLvlCnt = "rocksdb.non.last.level.read.count"
	tickerBloomUseful   = "rocksdb.bloom.filter.useful"
	histSSTRead         = "rocksdb.sst.read.micros"
)

// BlockStats are cumulative block-level read counters of a store since Open,
// taken from RocksDB's statistics (Options.Statistics). Take two and Sub them to
// measure a workload. A store reopened (Close + Open) starts again from zero with
// an empty block cache.
type BlockStats struct {
	// DataBlockReads counts data blocks RocksDB had to read from an SST file
	// (data-block cache misses): the number that tells how many blocks a
	// workload touched beyond the cache.
	DataBlockReads uint64
	// DataBlockHits counts data blocks served from the block cache.
	DataBlockHits uint64
	// DataBlockBytes is the bytes of the data blocks read (inserted into the
	// cache after a miss; uncompressed size).
	DataBlockBytes uint64
	// IndexBlockReads and FilterBlockReads count index and filter blocks (or
	// partitions) read from SST files.
	IndexBlockReads  uint64
	FilterBlockReads uint64
	// FileReads and FileReadBytes count the reads of SST files RocksDB issued
	// for user reads, of any block kind, and their bytes (compressed, as on
	// disk; served by the OS page cache unless Options.DirectReads).
	FileReads     uint64
	FileReadBytes uint64
	// FilterUseful counts point lookups a filter answered "absent" without
	// reading a data block.
	FilterUseful uint64
}

// Sub returns b - prev, field by field: the counts between two snapshots.
func (b BlockStats) Sub(prev BlockStats) BlockStats {
	return BlockStats{
		DataBlockReads:   b.DataBlockReads - prev.DataBlockReads,
		DataBlockHits:    b.DataBlockHits - prev.DataBlockHits,
		DataBlockBytes:   b.DataBlockBytes - prev.DataBlockBytes,
		IndexBlockReads:  b.IndexBlockReads - prev.IndexBlockReads,
		FilterBlockReads: b.FilterBlockReads - prev.FilterBlockReads,
		FileReads:        b.FileReads - prev.FileReads,
		FileReadBytes:    b.FileReadBytes - prev.FileReadBytes,
		FilterUseful:     b.FilterUseful - prev.FilterUseful,
	}
}

// BlockStats returns the block-level read counters since Open. It needs
// Options.Statistics (else ErrStatisticsDisabled) and parses RocksDB's
// statistics dump, so it costs about a millisecond: call it around a workload,
// not inside it.
func (s *Store) BlockStats() (BlockStats, error) {
	m, err := s.Statistics()
	if err != nil {
		return BlockStats{}, err
	}
	return BlockStats{
		DataBlockReads:   m[tickerDataMiss],
		DataBlockHits:    m[tickerDataHit],
		DataBlockBytes:   m[tickerDataBytes],
		IndexBlockReads:  m[tickerIndexMiss],
		FilterBlockReads: m[tickerFilterMiss],
		FileReads:        m[tickerLastLevelCnt] + m[tickerNonLastLvlCnt],
		FileReadBytes:    m[tickerLastLevelRd] + m[tickerNonLastLvlRd],
		FilterUseful:     m[tickerBloomUseful],
	}, nil
}

// Statistics returns every RocksDB statistic since Open, by RocksDB's name: each
// ticker as its count ("rocksdb.block.cache.data.miss"), each histogram as
// name+".count" and name+".sum" ("rocksdb.sst.read.micros.count"). It needs
// Options.Statistics, else ErrStatisticsDisabled.
func (s *Store) Statistics() (map[string]uint64, error) {
	if err := s.acquire(); err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	if !s.opts.Statistics {
		return nil, ErrStatisticsDisabled
	}
	return parseStatistics(s.native.db.GetStatisticsString()), nil
}

// parseStatistics parses RocksDB's Statistics::ToString output, whose lines are
//
//	rocksdb.block.cache.miss COUNT : 12
//	rocksdb.db.get.micros P50 : 1.5 P95 : 3.0 ... COUNT : 40 SUM : 120
//
// Lines it does not understand are skipped.
func parseStatistics(text string) map[string]uint64 {
	m := make(map[string]uint64, 512)
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		name := f[0]
		if len(f) == 4 && f[1] == "COUNT" && f[2] == ":" {
			if v, err := strconv.ParseUint(f[3], 10, 64); err == nil {
				m[name] = v
			}
			continue
		}
		for i := 1; i+2 < len(f); i += 3 {
			if f[i+1] != ":" {
				break
			}
			switch f[i] {
			case "COUNT", "SUM":
				if v, err := strconv.ParseUint(f[i+2], 10, 64); err == nil {
					m[name+"."+strings.ToLower(f[i])] = v
				}
			}
		}
	}
	return m
}
