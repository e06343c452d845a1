package manual

import (
	"os"
	"sync/atomic"
)

// Region is a buffer from New: outside the Go heap where the operating system
// allows it, else an ordinary heap slice (the same semantics, minus the
// benefits above).
type Region struct {
	b      []byte
	mapped bool // b is a mapping of its own, unmapped by Free
}

// mapped is the bytes of the regions mapped and not yet freed, in the whole
// process (Mapped).
var mapped atomic.Int64

// Mapped reports the bytes of memory the process holds in regions from New
// outside the Go heap (mapped, not yet freed; whether touched or not), in
// whole pages, as the mappings take them. The collector neither sees nor
// limits it (GOMEMLIMIT does not count it).
func Mapped() int64 { return mapped.Load() }

// pages returns n rounded up to whole pages.
func pages(n int) int64 {
	p := os.Getpagesize()
	return int64((n + p - 1) / p * p)
}

// New returns a region of n zeroed bytes (an empty one for n <= 0). Pages
// are faulted in on first touch, so reserving a large region costs nothing
// until it is used; a region of 2 MiB or more is backed by huge pages where
// the system has them (adviseHuge), so its first touch costs a fault per
// 2 MiB, and its memory is resident in steps of 2 MiB.
func New(n int) Region {
	if n <= 0 {
		return Region{}
	}
	if b, ok := mapAnon(n); ok {
		adviseHuge(b)
		mapped.Add(pages(n))
		return Region{b: b, mapped: true}
	}
	return Region{b: make([]byte, n)}
}

// Bytes returns the region's memory, valid until Free.
func (r *Region) Bytes() []byte { return r.b }

// Free releases the region's memory. Nothing may use it afterwards; a
// second Free does nothing.
func (r *Region) Free() {
	if r.mapped {
		mapped.Add(-pages(len(r.b)))
		unmap(r.b)
	}
	*r = Region{}
}
