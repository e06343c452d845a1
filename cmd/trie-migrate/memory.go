package main

// #include <malloc.h>
import "C"

import "runtime/debug"

// limitMallocArenas caps glibc's malloc at two arenas for the whole process.
// RocksDB allocates its blocks, memtables and compaction buffers from many
// threads, and glibc gives each thread an arena of its own (up to 8 per
// core) whose freed memory is seldom returned: on a 10M-account migration
// that held ~200 MB of the process's resident memory (docs/benchmarks.md §7).
// It must run before the stores are opened; a command may do it, a library
// must not (it changes the process's allocator).
func limitMallocArenas() {
	C.mallopt(C.M_ARENA_MAX, 2)
}

// tightenGC makes the collector run when the Go heap has grown by a quarter
// since the last collection, not doubled: the migration's Go heap is mostly
// its batches' byte buffers (the leaf index's ~16 MiB batches, twice over),
// which cost little to mark, and the default let them take ~130 MB more
// than they hold.
func tightenGC() { debug.SetGCPercent(25) }
