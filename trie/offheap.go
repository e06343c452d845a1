package trie

import "github.com/hexstate/hexstate/internal/manual"

// OffHeapBytes reports the memory that hexstate holds outside the Go heap in
// this process, across every open DB: the vertex caches' rings and indexes,
// the sealed frames' packed records, and the background writers' batch
// buffers (docs/design.md §7, "Memory outside the Go heap"). The garbage
// collector neither sees nor limits it: a client that sets GOMEMLIMIT sets it
// to its memory budget less this (and less RocksDB's caches, which are C
// memory). It is mapped memory, counted whether or not it has been touched
// yet; a frame's records are freed once the collector finds the frame
// unreachable.
func OffHeapBytes() int64 { return manual.Mapped() }
