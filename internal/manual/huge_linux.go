package manual

import "syscall"

// hugePage is the size of a transparent huge page on Linux (x86-64, arm64
// with 4 KiB base pages).
const hugePage = 2 << 20

// adviseHuge asks the kernel to back b, a fresh mapping of hugePage bytes or
// more, with transparent huge pages where it can (madvise MADV_HUGEPAGE;
// systems whose THP setting is "madvise", Debian's default, use them only
// where asked). A region is then faulted in 2 MiB at a time, not 4 KiB:
// on the benchmark VMs first-touching 64 MiB took ~320 ms in 4 KiB faults
// and 4-9 ms in huge pages (docs/benchmarks.md §9, "Huge pages for the
// memory outside the heap"). A refusal (THP disabled) changes nothing but
// that cost, so its error is ignored.
func adviseHuge(b []byte) {
	if len(b) >= hugePage {
		_ = syscall.Madvise(b, syscall.MADV_HUGEPAGE)
	}
}
