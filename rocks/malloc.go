package rocks

// #include <malloc.h>
//
// // hx_arena_max sets glibc's M_ARENA_MAX; 1 on success, 0 where the C
// // library has no such setting (it is glibc's).
// static int hx_arena_max(int n) {
// #ifdef M_ARENA_MAX
// 	return mallopt(M_ARENA_MAX, n);
// #else
// 	return 0;
// #endif
// }
import "C"

import (
	"errors"
	"fmt"
)

// ErrMallocTuning is returned by LimitMallocArenas where the C library has
// no arena limit to set (not glibc).
var ErrMallocTuning = errors.New("rocks: the C library cannot limit its malloc arenas")

// LimitMallocArenas limits the arenas glibc's malloc, which RocksDB
// allocates from, keeps to n for the whole process (mallopt(M_ARENA_MAX);
// the same as starting the process with MALLOC_ARENA_MAX=n). glibc makes an
// arena for each thread that finds the others busy, up to eight per core, and
// each keeps the memory freed into it: RocksDB's block cache, memtables and
// table readers allocate and free from its own threads and from every Go
// thread that calls into it, so their freed memory is spread over many
// arenas and the process's RSS grows well past what RocksDB holds. With 2
// arenas, a 10M-account state persisting every 64 blocks peaked 130–280 MiB
// lower (docs/benchmarks.md §10.5). It is a process-wide setting, like
// GOMEMLIMIT, so it is the application's to make, once, before opening
// stores: Open never makes it. Arenas made before the call stay.
func LimitMallocArenas(n int) error {
	if n < 1 {
		return fmt.Errorf("rocks: limit malloc arenas to %d: need at least 1", n)
	}
	if C.hx_arena_max(C.int(n)) != 1 {
		return ErrMallocTuning
	}
	return nil
}
