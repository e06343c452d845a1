package rocks

import (
	"runtime"

	"github.com/linxGnu/grocksdb"
)

// Default option values; see Options and docs/design.md (RocksDB table options) for the reasons.
const (
	// DefaultBlockCacheBytes is the default Options.BlockCacheBytes (256 MiB).
	DefaultBlockCacheBytes = 256 << 20
	// DefaultBlockSizeBytes is the default Options.BlockSizeBytes (4 KiB).
	DefaultBlockSizeBytes = 4 << 10
	// DefaultBloomBitsPerKey is the default Options.BloomBitsPerKey (~1% false positives).
	DefaultBloomBitsPerKey = 10
	// DefaultWriteBufferBytes is the default Options.WriteBufferBytes (16 MiB).
	DefaultWriteBufferBytes = 16 << 20
	// WriteBuffers is how many memtables a column family may hold, and
	// WriteBuffersToMerge how many of them one flush merges into one file.
	WriteBuffers, WriteBuffersToMerge = 8, 4
	// DefaultMaxOpenFiles is the default Options.MaxOpenFiles (-1: all files open).
	DefaultMaxOpenFiles = -1
	// DefaultMetadataBlock is the target size of an index or filter partition
	// when the index is partitioned (Options.FlatIndex false).
	DefaultMetadataBlock = 4 << 10
	// DefaultIngestBytes is the default Options.IngestBytes (16 MiB).
	DefaultIngestBytes = 16 << 20
)

// Options configures Open. A nil *Options, and every zero field, means the
// default; so &Options{Sync: true} is the defaults plus synchronous writes.
// Anything not covered here can be changed with Tune.
type Options struct {
	// BlockCacheBytes is the capacity of the LRU block cache shared by all
	// column families; index and filter partitions live in it too, with high
	// priority. Default 256 MiB.
	BlockCacheBytes uint64

	// BlockSizeBytes is the target uncompressed size of a data block, the unit
	// RocksDB reads and caches. Larger blocks make it likelier that a v2 branch's
	// 16 children share one block, smaller ones make point reads cheaper.
	// Default 4 KiB.
	BlockSizeBytes int

	// BloomBitsPerKey sizes the per-key filter (a Ribbon filter with the
	// false-positive rate of a Bloom filter of that many bits per key, Bloom on
	// level 0 where filters are built often). Default 10 (about 1% false
	// positives). The vertex column family has none in its last level, where
	// every lookup finds its key. A negative value disables filters.
	BloomBitsPerKey float64

	// FlatIndex disables the partitioned (two-level) index and filters, giving
	// one index block and one filter block per SST file. The default
	// (false) partitions them, pins the top level and caches the partitions in
	// the block cache with high priority, so memory stays bounded by the cache.
	FlatIndex bool

	// NoCompression stores blocks uncompressed. The default compresses with LZ4
	// on every level but the bottommost, which uses ZSTD.
	NoCompression bool

	// FullLoadCompression compresses the files a load ingests at the bottom
	// level (a batch into a key range that holds no key yet: a build's, a
	// migration's) at the bottom level's own ZSTD level, as a compaction
	// does. By default they are compressed at ZSTD's fast level -1: about
	// 2.5 % more bytes for those files until a compaction rewrites them, for
	// about half the CPU of compressing them (at level 3 a quarter of a
	// migration's CPU; docs/design.md §12, "Large batches as ingested files").
	FullLoadCompression bool

	// WriteBufferBytes is the size of one memtable. RocksDB keeps up to
	// WriteBuffers of them per column family and flushes WriteBuffersToMerge
	// at a time into one level-0 file. Small memtables make the inserts of a
	// write batch cheaper (a shallower skiplist; BenchmarkWriteShape compares
	// settings, docs/benchmarks.md has the numbers), while merged flushes keep
	// level-0 files as large as several memtables. Default 16 MiB.
	WriteBufferBytes uint64

	// MaxOpenFiles bounds the SST files RocksDB keeps open; -1 keeps them all
	// open (Go raises the file-descriptor soft limit to the hard limit at
	// start). Default -1.
	MaxOpenFiles int

	// BackgroundJobs is the number of flush and compaction threads. Default
	// max(2, GOMAXPROCS).
	BackgroundJobs int

	// LowPriorityBackground runs RocksDB's flush and compaction threads at the
	// lowest CPU priority (RocksDB's LowerThreadPoolCPUPriority: nice 19), so
	// that on a machine with few cores they take what the block processing
	// leaves idle. The thread pools are RocksDB's process-wide default ones:
	// once a store asks for it, every RocksDB database of the process runs its
	// background work that way.
	LowPriorityBackground bool

	// IngestBytes is the batch size (its records, keys and values) from which
	// Write builds the batch as SST files and ingests them, instead of writing
	// it to the write-ahead log and the memtables: one persist of many blocks
	// then costs RocksDB no log record, no skiplist inserts and no flush later
	// (docs/design.md, "Large batches as ingested files"). Smaller batches
	// (but a load's, vertex.Batch.Load), and batches whose keys are not in
	// order, take the write-ahead log. Default 16 MiB; a negative value never
	// ingests.
	IngestBytes int64

	// Sync makes every Write fsync the write-ahead log before returning. Without
	// it (the default) a Write survives a crash of the process (SIGKILL, panic)
	// but the last writes may be lost on power loss or an OS crash; the store is
	// still consistent (each Write is all or nothing).
	Sync bool

	// Statistics enables RocksDB's statistics, which BlockStats and Statistics
	// read. It costs a little CPU on every read. Default off.
	Statistics bool

	// DirectReads reads SST files with O_DIRECT, bypassing the OS page cache, so
	// that every block-cache miss is a real device read (useful for cold-cache
	// benchmarks). Default off.
	DirectReads bool

	// ReadOnly opens an existing store without taking its lock or writing
	// anything; Write and Compact return ErrReadOnly. A missing or empty
	// directory is ErrNoDatabase.
	ReadOnly bool

	// ReserveBytes is the free space the store keeps on its file system for
	// RocksDB's background work (memtable flushes, compactions): a Write that
	// would leave less is refused with ErrNoSpace before RocksDB sees it, and
	// succeeds when retried after space was freed. A quarter of it is held by a
	// reserve file in the store directory, released when space runs short. The
	// default (0) is 2 × WriteBuffers × WriteBufferBytes (256 MiB with the
	// default write buffer); a negative value disables the guard, and RocksDB
	// may then hit a full disk itself (see NoSpaceError). docs/design.md
	// ("Full disk") explains the approach and its limits.
	ReserveBytes int64

	// SalvageWAL opens a store whose write-ahead log is damaged before its end
	// (which Open otherwise refuses with ErrWALCorrupt) at the last write before
	// the damage, dropping the writes after it; Store.WALDamage then reports
	// what was kept. Set it only after the damage was reported and accepted:
	// the recovered store no longer holds the dropped writes, and once it is
	// opened read-write RocksDB flushes the recovered state and deletes the
	// damaged log.
	SalvageWAL bool

	// Tune, when set, is called last with the RocksDB options (used for the
	// database and both column families) and the block-based table options,
	// after all the settings above; the table options are installed after it
	// returns. It may change anything, e.g. set compaction styles or per-level
	// compression. It must not keep the pointers.
	Tune func(*grocksdb.Options, *grocksdb.BlockBasedTableOptions)
}

// DefaultOptions returns the options Open uses for a nil *Options, with every
// field spelled out.
func DefaultOptions() Options {
	return Options{
		BlockCacheBytes:  DefaultBlockCacheBytes,
		BlockSizeBytes:   DefaultBlockSizeBytes,
		BloomBitsPerKey:  DefaultBloomBitsPerKey,
		WriteBufferBytes: DefaultWriteBufferBytes,
		MaxOpenFiles:     DefaultMaxOpenFiles,
		BackgroundJobs:   max(2, runtime.GOMAXPROCS(0)),
		ReserveBytes:     2 * WriteBuffers * DefaultWriteBufferBytes,
		IngestBytes:      DefaultIngestBytes,
	}
}

// withDefaults returns a copy of o (nil = defaults) with zero fields filled in.
func (o *Options) withDefaults() Options {
	d := DefaultOptions()
	if o == nil {
		return d
	}
	r := *o
	if r.BlockCacheBytes == 0 {
		r.BlockCacheBytes = d.BlockCacheBytes
	}
	if r.BlockSizeBytes <= 0 {
		r.BlockSizeBytes = d.BlockSizeBytes
	}
	if r.BloomBitsPerKey == 0 {
		r.BloomBitsPerKey = d.BloomBitsPerKey
	}
	if r.WriteBufferBytes == 0 {
		r.WriteBufferBytes = d.WriteBufferBytes
	}
	if r.MaxOpenFiles == 0 {
		r.MaxOpenFiles = d.MaxOpenFiles
	}
	if r.BackgroundJobs <= 0 {
		r.BackgroundJobs = d.BackgroundJobs
	}
	if r.ReserveBytes == 0 {
		r.ReserveBytes = int64(2 * WriteBuffers * r.WriteBufferBytes)
	}
	if r.IngestBytes == 0 {
		r.IngestBytes = d.IngestBytes
	}
	return r
}

// memtableBloomRatio sizes each memtable's whole-key Bloom filter as a
// fraction of its write buffer (RocksDB's memtable_prefix_bloom_size_ratio):
// 1.6 MiB for a 16 MiB memtable, RocksDB's usual setting.
const memtableBloomRatio = 0.1

// nativeOptions owns the grocksdb objects built from Options; they must outlive
// the database and are destroyed after it is closed.
type nativeOptions struct {
	db       *grocksdb.Options // the database's, and every column family's but the vertices'
	vertices *grocksdb.Options // the vertex column family's: db's, without last-level filters
	table    *grocksdb.BlockBasedTableOptions
	cache    *grocksdb.Cache
}

// build turns o (already with defaults) into RocksDB options. create sets the
// flags that let RocksDB create the database and its column families; Open only
// passes it for a missing or empty directory.
func (o *Options) build(create bool) *nativeOptions {
	n := &nativeOptions{
		db:    grocksdb.NewDefaultOptions(),
		table: grocksdb.NewDefaultBlockBasedTableOptions(),
		cache: grocksdb.NewLRUCache(o.BlockCacheBytes),
	}
	t, d := n.table, n.db

	// Table (SST) format.
	t.SetBlockCache(n.cache)
	t.SetBlockSize(o.BlockSizeBytes)
	t.SetFormatVersion(5)
	t.SetCacheIndexAndFilterBlocks(true)
	t.SetCacheIndexAndFilterBlocksWithHighPriority(true)
	t.SetPinL0FilterAndIndexBlocksInCache(true)
	if !o.FlatIndex {
		t.SetIndexType(grocksdb.KTwoLevelIndexSearchIndexType)
		t.SetPartitionFilters(true)
		t.SetMetadataBlockSize(DefaultMetadataBlock)
		t.SetPinTopLevelIndexAndFilter(true)
	}
	if o.BloomBitsPerKey > 0 {
		t.SetFilterPolicy(grocksdb.NewRibbonHybridFilterPolicy(o.BloomBitsPerKey, 1))
	}
	// A hash index inside each data block makes point lookups (Vertex) skip the
	// in-block binary search; iterators still use the binary index.
	t.SetDataBlockIndexType(grocksdb.KDataBlockIndexTypeBinarySearchAndHash)
	t.SetDataBlockHashRatio(0.75)

	// Database.
	d.SetCreateIfMissing(create)
	d.SetCreateIfMissingColumnFamilies(create)
	d.SetErrorIfExists(false)
	d.SetMaxOpenFiles(o.MaxOpenFiles)
	d.SetMaxBackgroundJobs(o.BackgroundJobs)
	if o.LowPriorityBackground {
		env := grocksdb.NewDefaultEnv() // a handle on the process-wide default Env
		env.LowerThreadPoolCPUPriority()
		env.LowerHighPriorityThreadPoolCPUPriority()
		d.SetEnv(env)
	}
	d.SetBytesPerSync(1 << 20)
	d.SetKeepLogFileNum(5)
	d.SetMaxLogFileSize(16 << 20)
	if o.Statistics {
		d.EnableStatistics()
	}
	if o.DirectReads {
		d.SetUseDirectReads(true)
	}

	// Column families (both share these options).
	d.SetWriteBufferSize(o.WriteBufferBytes)
	d.SetMaxWriteBufferNumber(WriteBuffers)
	d.SetMinWriteBufferNumberToMerge(WriteBuffersToMerge)
	// A whole-key Bloom filter in each memtable: persisting every block keeps
	// several memtables alive, and without it every lookup searches each
	// one's skiplist for keys that are nearly all in the SST files.
	d.SetMemTablePrefixBloomSizeRatio(memtableBloomRatio)
	d.SetMemtableWholeKeyFiltering(true)
	d.SetLevelCompactionDynamicLevelBytes(true)
	d.SetTargetFileSizeBase(64 << 20)
	d.SetMaxBytesForLevelBase(256 << 20)
	if o.NoCompression {
		d.SetCompression(grocksdb.NoCompression)
		d.SetBottommostCompression(grocksdb.NoCompression)
	} else {
		d.SetCompression(grocksdb.LZ4Compression)
		d.SetBottommostCompression(grocksdb.ZSTDCompression)
	}

	if o.Tune != nil {
		o.Tune(d, t)
	}
	d.SetBlockBasedTableFactory(t)

	// The vertex column family is only ever asked for IDs it holds (a
	// vertex is read because a parent names it), so a Bloom filter in its
	// last level, where ~90 % of the records sit, never says no: it only
	// takes block-cache room from the index partitions and data blocks.
	// Upper levels keep theirs (they skip the files a key is not in).
	n.vertices = d.Clone()
	n.vertices.SetOptimizeFiltersForHits(true)
	return n
}

// cfOptions returns the options of column family name.
func (n *nativeOptions) cfOptions(name string) *grocksdb.Options {
	if name == cfVertices {
		return n.vertices
	}
	return n.db
}

// destroy frees the native objects; call it only after the database is closed.
func (n *nativeOptions) destroy() {
	if n == nil {
		return
	}
	n.db.Destroy()
	destroyOptionsCopy(n.vertices)
	n.table.Destroy()
	n.cache.Destroy()
}
