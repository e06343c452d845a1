package rocks

// #cgo LDFLAGS: -lrocksdb
// #include <stdint.h>
// #include <stdlib.h>
// #include <string.h>
// #include "rocksdb/c.h"
//
// #define HX_MULTIGET_MAX 64
//
// // hx_multiget looks the n (at most HX_MULTIGET_MAX) 8-byte keys at keys up
// // in cf with one batched MultiGet (sorted: keys ascending) and copies into
// // buf, for each key in order, its record's length (u32, little-endian;
// // UINT32_MAX when absent) and the record. It returns 0; with *need set
// // when buf is too small for them (call again with need bytes); -1 with
// // *err set (malloc'd) on an error.
// static int hx_multiget(rocksdb_t* db, const rocksdb_readoptions_t* ro,
// 		rocksdb_column_family_handle_t* cf, const char* keys, size_t n,
// 		unsigned char sorted, char* buf, size_t cap, size_t* need, char** err) {
// 	rocksdb_set_perf_level(rocksdb_disable); // see Store.writeRep
// 	const char* kp[HX_MULTIGET_MAX];
// 	size_t ks[HX_MULTIGET_MAX];
// 	rocksdb_pinnableslice_t* vals[HX_MULTIGET_MAX];
// 	char* errs[HX_MULTIGET_MAX];
// 	for (size_t i = 0; i < n; i++) {
// 		kp[i] = keys + 8 * i;
// 		ks[i] = 8;
// 		vals[i] = NULL;
// 		errs[i] = NULL;
// 	}
// 	rocksdb_batched_multi_get_cf(db, ro, cf, n, kp, ks, vals, errs, sorted != 0);
// 	size_t used = 0;
// 	*need = 0;
// 	*err = NULL;
// 	for (size_t i = 0; i < n; i++) {
// 		if (errs[i] != NULL) {
// 			if (*err == NULL) *err = errs[i]; else free(errs[i]);
// 		}
// 		size_t vl = 0;
// 		const char* v = NULL;
// 		uint32_t l = UINT32_MAX;
// 		if (vals[i] != NULL) {
// 			v = rocksdb_pinnableslice_value(vals[i], &vl);
// 			l = (uint32_t)vl;
// 		}
// 		if (used + 4 + vl <= cap) {
// 			memcpy(buf + used, &l, 4);
// 			if (vl > 0) memcpy(buf + used + 4, v, vl);
// 		}
// 		used += 4 + vl;
// 		if (vals[i] != NULL) rocksdb_pinnableslice_destroy(vals[i]);
// 	}
// 	if (*err != NULL) return -1;
// 	if (used > cap) *need = used;
// 	return 0;
// }
import "C"

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/hexstate/hexstate/vertex"
)

// multiGetRun is how many keys Vertices hands RocksDB per C call
// (HX_MULTIGET_MAX).
const multiGetRun = 64

// Vertices looks ids up with one batched MultiGet per 64 of them and calls fn
// for each in order with its record, nil when there is none. A point lookup
// asks each upper level's filter before reading a block there, where a range
// read's iterator reads a block in every level whose files overlap the
// range: reading only a v2 branch's used slots this way skips the levels that
// hold none of them. rec is only valid during the call. An error from fn
// stops it and is returned as is. It counts a batch read, its IDs, and a
// record per record found.
func (s *Store) Vertices(ids []vertex.ID, fn func(i int, rec []byte) error) error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	s.batchReads.Add(1)
	s.batchKeys.Add(uint64(len(ids)))
	if len(ids) == 0 {
		return nil
	}
	r := s.ranges.get() // for its scan buffer (r.buf); its iterators are not used
	defer s.ranges.put(r)
	var keys [8 * multiGetRun]byte
	db := *(**C.rocksdb_t)(unsafe.Pointer(s.db))
	ro := *(**C.rocksdb_readoptions_t)(unsafe.Pointer(s.ro))
	cf := *(**C.rocksdb_column_family_handle_t)(unsafe.Pointer(s.cfVertex))
	for done := 0; done < len(ids); {
		run := ids[done:min(done+multiGetRun, len(ids))]
		for i, id := range run {
			putKey(keys[8*i:], id)
		}
		sorted := C.uchar(0)
		if slices.IsSorted(run) {
			sorted = 1
		}
		if cap(r.buf) < 4096 {
			r.buf = make([]byte, 4096)
		}
		r.buf = r.buf[:cap(r.buf)]
		var need C.size_t
		var msg *C.char
		rc := C.hx_multiget(db, ro, cf, (*C.char)(unsafe.Pointer(&keys[0])), C.size_t(len(run)), sorted,
			(*C.char)(unsafe.Pointer(&r.buf[0])), C.size_t(len(r.buf)), &need, &msg)
		if rc < 0 {
			err := C.GoString(msg)
			C.free(unsafe.Pointer(msg))
			return fmt.Errorf("rocks: read %d vertices from %d: %s", len(run), run[0], err)
		}
		if need > 0 {
			r.buf = make([]byte, int(need))
			continue // the same run again, into a buffer that holds it
		}
		for i, off := 0, 0; i < len(run); i++ {
			l := binary.LittleEndian.Uint32(r.buf[off:])
			off += 4
			var rec []byte
			if l != math.MaxUint32 {
				rec = r.buf[off : off+int(l) : off+int(l)]
				off += int(l)
				s.records.Add(1)
			}
			if err := fn(done+i, rec); err != nil {
				return err
			}
		}
		done += len(run)
	}
	return nil
}
