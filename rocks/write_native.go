package rocks

// #cgo LDFLAGS: -lrocksdb
// #include <stdlib.h>
// #include "rocksdb/c.h"
//
// // hx_write applies to db, with write options wo, the write batch whose
// // representation is rep[0:len], with RocksDB's perf counters off on the
// // calling thread. It returns NULL, or a malloc'd message the caller frees.
// static char* hx_write(rocksdb_t* db, const rocksdb_writeoptions_t* wo,
// 		const char* rep, size_t len) {
// 	rocksdb_set_perf_level(rocksdb_disable);
// 	rocksdb_writebatch_t* wb = rocksdb_writebatch_create_from(rep, len);
// 	char* err = NULL;
// 	rocksdb_write(db, wo, wb, &err);
// 	rocksdb_writebatch_destroy(wb);
// 	return err;
// }
import "C"

import (
	"errors"
	"unsafe"
)

// writeRep applies the write batch representation rep (rocks' batchRep
// bytes) in one native call.
//
// RocksDB counts into a thread-local perf context on every key comparison
// unless the thread's perf level is "disable"; the level is per thread and
// defaults to counting, so every thread the Go runtime runs this call on
// would pay two thread-local lookups (through __tls_get_addr: librocksdb is a
// shared library) per comparison of the memtable's skip-list insert. hexstate
// reads no perf context, so the call turns counting off first (one
// thread-local store). The batch is made from rep, written and freed in one
// cgo call instead of grocksdb's three.
func (s *Store) writeRep(rep []byte) error {
	db := *(**C.rocksdb_t)(unsafe.Pointer(s.db))
	wo := *(**C.rocksdb_writeoptions_t)(unsafe.Pointer(s.wo))
	msg := C.hx_write(db, wo, (*C.char)(unsafe.Pointer(&rep[0])), C.size_t(len(rep)))
	if msg == nil {
		return nil
	}
	err := errors.New(C.GoString(msg))
	C.free(unsafe.Pointer(msg))
	return err
}
