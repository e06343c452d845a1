package manual

import "syscall"

// hugePage is the size of a transparent huge page (x86-64, and arm64 with
// 4 KiB base pages).
const hugePage = 2 << 20

// mapAnon maps n bytes of private anonymous memory, and for n of hugePage or
// more asks for transparent huge pages (madvise MADV_HUGEPAGE; Debian's
// default THP mode, "madvise", uses them only where asked): the region is
// then faulted in 2 MiB at a time, not 4 KiB, which on virtual machines
// (a fault is the guest's and the host's) is most of the cost of fresh
// memory (docs/benchmarks.md §9, "Huge pages for the memory outside the
// heap").
//
// The kernel backs only whole 2 MiB ranges aligned to 2 MiB with huge pages,
// and aligns an anonymous mapping to 2 MiB only when its length is a
// multiple of it. So the mapping m is n rounded up to a multiple of
// hugePage, b is its first n bytes, and the last 2 MiB of a mapping longer
// than n is advised against huge pages (MADV_NOHUGEPAGE): the part of it
// that b covers is faulted in 4 KiB at a time, and the rest, never touched,
// never becomes resident. A refusal of either advice (THP disabled) changes
// nothing but the cost of faults, so its error is ignored.
func mapAnon(n int) (b, m []byte, ok bool) {
	size := n
	if n >= hugePage {
		size = (n + hugePage - 1) / hugePage * hugePage
	}
	m, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, nil, false
	}
	if n >= hugePage {
		_ = syscall.Madvise(m, syscall.MADV_HUGEPAGE)
		if size != n {
			_ = syscall.Madvise(m[size-hugePage:], syscall.MADV_NOHUGEPAGE)
		}
	}
	return m[:n:n], m, true
}

// unmap unmaps a mapping mapAnon made. It cannot fail on one.
func unmap(m []byte) { _ = syscall.Munmap(m) }
