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
// // in cf with one batched MultiGet (sorted: keys ascending) and copies each
// // record found into buf as index (u32, little-endian) | value length (u32,
// // little-endian) | value. It returns the number of records copied; 0 with
// // *need set when buf is too small for them (call again with need bytes);
// // -1 with *err set (malloc'd) on an error.
// static int hx_multiget(rocksdb_t* db, const rocksdb_readoptions_t* ro,
// 		rocksdb_column_family_handle_t* cf, const char* keys, size_t n,
// 		unsigned char sorted, char* buf, size_t cap, size_t* need, char** err) {
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
// 	int count = 0;
// 	*need = 0;
// 	*err = NULL;
// 	for (size_t i = 0; i < n; i++) {
// 		if (errs[i] != NULL) {
// 			if (*err == NULL) *err = errs[i]; else free(errs[i]);
// 		}
// 		if (vals[i] == NULL) continue;
// 		size_t vl;
// 		const char* v = rocksdb_pinnableslice_value(vals[i], &vl);
// 		if (used + 8 + vl <= cap) {
// 			uint32_t h[2] = {(uint32_t)i, (uint32_t)vl};
// 			memcpy(buf + used, h, 8);
// 			memcpy(buf + used + 8, v, vl);
// 			count++;
// 		}
// 		used += 8 + vl;
// 		rocksdb_pinnableslice_destroy(vals[i]);
// 	}
// 	if (*err != NULL) return -1;
// 	if (used > cap) { *need = used; return 0; }
// 	return count;
// }
import "C"

import (
	"encoding/binary"
	"fmt"
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
		n := C.hx_multiget(db, ro, cf, (*C.char)(unsafe.Pointer(&keys[0])), C.size_t(len(run)), sorted,
			(*C.char)(unsafe.Pointer(&r.buf[0])), C.size_t(len(r.buf)), &need, &msg)
		if n < 0 {
			err := C.GoString(msg)
			C.free(unsafe.Pointer(msg))
			return fmt.Errorf("rocks: read %d vertices from %d: %s", len(run), run[0], err)
		}
		if need > 0 {
			r.buf = make([]byte, int(need))
			continue // the same run again, into a buffer that holds it
		}
		s.records.Add(uint64(n))
		next := 0 // the next index of run to report
		for off, k := 0, 0; k < int(n); k++ {
			i := int(binary.LittleEndian.Uint32(r.buf[off:]))
			l := int(binary.LittleEndian.Uint32(r.buf[off+4:]))
			rec := r.buf[off+8 : off+8+l : off+8+l]
			off += 8 + l
			for ; next < i; next++ {
				if err := fn(done+next, nil); err != nil {
					return err
				}
			}
			if err := fn(done+i, rec); err != nil {
				return err
			}
			next = i + 1
		}
		for ; next < len(run); next++ {
			if err := fn(done+next, nil); err != nil {
				return err
			}
		}
		done += len(run)
	}
	return nil
}
