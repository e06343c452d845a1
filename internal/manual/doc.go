// Package manual hands out memory outside the Go heap, for large,
// long-lived buffers that hold no Go pointers (the vertex cache's ring).
//
// Why not the Go heap: the garbage collector sizes the heap at (1 +
// GOGC/100) times what it found live, so every byte a cache keeps live in
// the heap lets another byte of garbage accumulate before the next
// collection, and that headroom is memory the process must fault in. When
// the live heap shrinks (a persist lands and its frames are dropped), the
// runtime's scavenger returns the headroom to the operating system, and the
// next growth faults it in again, page by page. On the virtual machines this
// library is measured on a page fault costs 10-30 µs, and the blocks right
// after a persist ran at twice their usual time while the heap regrew
// (docs/benchmarks.md §9, "The heap's regrowth"). Memory from this package
// is mapped once, is not counted by the collector, and is never scavenged:
// once touched it stays resident until it is freed.
//
// Memory from New must hold no Go pointers (the collector does not scan it)
// and must not be used after Free. Arena's Slice is the one exception: a
// typed slice outside the heap whose pointers point into memory kept alive
// elsewhere (the arena's own buffers), so that the collector need not scan
// a large slice of records it could not free anyway. Pebble keeps its block
// cache outside the heap for the same reasons (its internal/manual
// package).
//
// Mapped counts the bytes mapped and not yet freed, process-wide (a counter
// the package keeps for reporting only; trie.OffHeapBytes is its public
// face), since neither runtime.MemStats nor GOMEMLIMIT sees them.
package manual
