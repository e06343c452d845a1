//go:build !unix

package manual

// mapAnon has no mapping to offer here: New falls back to the Go heap.
func mapAnon(int) (b, m []byte, ok bool) { return nil, nil, false }

// unmap is never called here (no region is mapped).
func unmap([]byte) {}
