//go:build !unix

package manual

// mapAnon has no mapping to offer here: New falls back to the Go heap.
func mapAnon(int) ([]byte, bool) { return nil, false }

// unmap is never called here (no region is mapped).
func unmap([]byte) {}
