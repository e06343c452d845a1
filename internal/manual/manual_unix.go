//go:build unix

package manual

import "syscall"

// mapAnon maps n bytes of private anonymous memory.
func mapAnon(n int) ([]byte, bool) {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	return b, err == nil
}

// unmap unmaps a mapping mapAnon made. It cannot fail on one.
func unmap(b []byte) { _ = syscall.Munmap(b) }
