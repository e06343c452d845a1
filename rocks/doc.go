// Package rocks is the RocksDB implementation of hexstate's vertex store (the
// trie.Backend interface): a map from 64-bit vertex ID to encoded vertex record,
// plus one opaque admin record, kept in a RocksDB database through grocksdb.
//
// Records live in the column family "vertices", keyed by the 8-byte big-endian
// vertex ID, so consecutive IDs are adjacent keys: the 16 child slots
// [base, base+16) of a format-v2 branch usually share one data block and are read
// by VertexRange with a single iterator seek. The default column family holds the
// admin record and a marker that identifies the database as a hexstate store; see
// layout.go and docs/format.md for every byte.
//
// Open refuses anything that is not a hexstate store (a regular file, a non-empty
// directory without a database, a RocksDB database of some other program) with a
// typed error, and writes nothing in such a place. The admin record is stored as
// given: checking its format version is the caller's job.
//
// Open also refuses a store whose write-ahead log is damaged before its end
// (ErrWALCorrupt) instead of silently dropping the writes after the damage;
// Options.SalvageWAL opens it at the last intact write (see wal.go).
//
// Write never lets RocksDB run into a full disk, which RocksDB 7.8 may not
// survive: a free-space guard refuses a write that would leave less than
// Options.ReserveBytes free, with ErrNoSpace, and the same write succeeds once
// space is freed (see space.go).
//
// A large batch in key order (Options.IngestBytes) is written as SST files
// ingested into every column family at once, not through the write-ahead log
// and the memtables (see ingest.go; the SST writing and the multi-family
// ingestion go through a small C++ shim, ingest.cc).
//
// Store.MemoryUsage reports what RocksDB holds in memory, and
// LimitMallocArenas limits glibc's malloc arenas for the process (a setting
// the application makes; Open never does).
//
// A Store is safe for concurrent use. Close flushes the memtables and releases
// the database; every method called after Close returns ErrClosed.
package rocks
