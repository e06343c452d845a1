//go:build linux

package main

// #include <malloc.h>
import "C"

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
