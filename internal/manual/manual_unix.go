//go:build unix && !linux

package manual

import "syscall"

// mapAnon maps n bytes of private anonymous memory: the region and its
// mapping are the same slice.
func mapAnon(n int) (b, m []byte, ok bool) {
	m, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	return m, m, err == nil
}

// unmap unmaps a mapping mapAnon made. It cannot fail on one.
func unmap(m []byte) { _ = syscall.Munmap(m) }
