package manual

// Region is a buffer from New: outside the Go heap where the operating system
// allows it, else an ordinary heap slice (the same semantics, minus the
// benefits above).
type Region struct {
	b      []byte
	mapped bool // b is a mapping of its own, unmapped by Free
}

// New returns a region of n zeroed bytes (an empty one for n <= 0). Pages
// are faulted in on first touch, so reserving a large region costs nothing
// until it is used.
func New(n int) Region {
	if n <= 0 {
		return Region{}
	}
	if b, ok := mapAnon(n); ok {
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
		unmap(r.b)
	}
	*r = Region{}
}
