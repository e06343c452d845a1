package manual

import (
	"os"
	"sync/atomic"
	"unsafe"
)

// Region is a buffer from New: outside the Go heap where the operating system
// allows it, else an ordinary heap slice (the same semantics, minus the
// benefits above).
type Region struct {
	b []byte
	m []byte // the mapping b starts, unmapped by Free (nil for a heap slice): b's pages, or more (mapAnon)
}

// mapped is the bytes of the regions mapped and not yet freed, in the whole
// process (Mapped).
var mapped atomic.Int64

// Mapped reports the bytes of memory the process holds in regions from New
// outside the Go heap (mapped, not yet freed; whether touched or not), each
// in whole pages (not the address space a large region's mapping reserves
// beyond them, which is never touched). The collector neither sees nor
// limits it (GOMEMLIMIT does not count it).
func Mapped() int64 { return mapped.Load() }

// pages returns n rounded up to whole pages.
func pages(n int) int64 {
	p := os.Getpagesize()
	return int64((n + p - 1) / p * p)
}

// New returns a region of n zeroed bytes (an empty one for n <= 0). Pages
// are faulted in on first touch, so reserving a large region costs nothing
// until it is used. Where the system has transparent huge pages (Linux), a
// region of 2 MiB or more is backed by them but for its last, partial 2 MiB
// (mapAnon): its first touch costs a fault per 2 MiB instead of one per
// 4 KiB, and no byte beyond n is ever made resident.
func New(n int) Region {
	if n <= 0 {
		return Region{}
	}
	if b, m, ok := mapAnon(n); ok {
		mapped.Add(pages(n))
		return Region{b: b, m: m}
	}
	return Region{b: make([]byte, n)}
}

// Bytes returns the region's memory, valid until Free.
func (r *Region) Bytes() []byte { return r.b }

// Free releases the region's memory. Nothing may use it afterwards; a
// second Free does nothing.
func (r *Region) Free() {
	if r.m != nil {
		mapped.Add(-pages(len(r.b)))
		unmap(r.m)
	}
	*r = Region{}
}

// Typed returns r's memory as a slice of as many Ts as fit, valid until
// Free: a large slice of elements that hold no Go pointers (the collector
// does not scan it), outside the heap.
func Typed[T any](r *Region) []T {
	var zero T
	n := len(r.b) / int(unsafe.Sizeof(zero))
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(r.b))), n)
}
