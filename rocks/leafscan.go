package rocks

// #cgo LDFLAGS: -lrocksdb
// #include <stdint.h>
// #include <string.h>
// #include "rocksdb/c.h"
//
// // hx_scan_kv copies records from the iterator's position into buf, each as
// // key length (u32, little-endian) | value length (u32) | key | value, and
// // steps past each one it copies. It returns the bytes of buf used; *more
// // is set when it stopped on a record that did not fit (*need: the bytes
// // that record takes), else the iterator is exhausted or failed.
// static size_t hx_scan_kv(rocksdb_iterator_t* it, char* buf, size_t cap,
// 		int* more, size_t* need) {
// 	size_t used = 0;
// 	*more = 0;
// 	while (rocksdb_iter_valid(it)) {
// 		size_t kl, vl;
// 		const char* k = rocksdb_iter_key(it, &kl);
// 		const char* v = rocksdb_iter_value(it, &vl);
// 		if (used + 8 + kl + vl > cap) { *more = 1; *need = 8 + kl + vl; break; }
// 		uint32_t l = (uint32_t)kl;
// 		memcpy(buf + used, &l, 4);
// 		l = (uint32_t)vl;
// 		memcpy(buf + used + 4, &l, 4);
// 		memcpy(buf + used + 8, k, kl);
// 		memcpy(buf + used + 8 + kl, v, vl);
// 		used += 8 + kl + vl;
// 		rocksdb_iter_next(it);
// 	}
// 	return used;
// }
import "C"

import (
	"encoding/binary"
	"unsafe"

	"github.com/linxGnu/grocksdb"
)

// scanKV calls fn for every record from it's position on, in order, copying
// them into a Go buffer in runs with one cgo call per run (grocksdb's Valid,
// Key, Value and Next are four calls per record). The first run is 4 KiB, so
// that a caller who stops at the first record (an emptiness check) copies
// little; each full run doubles the next, up to 256 KiB. The key and value
// passed to fn are valid until fn returns. It stops at the first error of fn
// and returns it; the caller checks it.Err() afterwards.
func scanKV(it *grocksdb.Iterator, fn func(key, val []byte) error) error {
	buf := make([]byte, 4<<10)
	nit := nativeIterator(it)
	for {
		var more C.int
		var need C.size_t
		used := int(C.hx_scan_kv(nit, (*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)), &more, &need))
		for off := 0; off < used; {
			kl := int(binary.LittleEndian.Uint32(buf[off:]))
			vl := int(binary.LittleEndian.Uint32(buf[off+4:]))
			k := buf[off+8 : off+8+kl : off+8+kl]
			v := buf[off+8+kl : off+8+kl+vl : off+8+kl+vl]
			off += 8 + kl + vl
			if err := fn(k, v); err != nil {
				return err
			}
		}
		if more == 0 {
			return nil
		}
		if used == 0 || len(buf) < 256<<10 { // one record larger than buf, or a short run
			buf = make([]byte, max(2*len(buf), int(need)))
		}
	}
}
