package rocks

// #cgo LDFLAGS: -lrocksdb
// #include <stdint.h>
// #include <string.h>
// #include "rocksdb/c.h"
//
// typedef struct {
// 	size_t used;   // bytes of buf filled
// 	size_t need;   // with more set and no record copied: bytes the next record needs
// 	size_t badlen; // with a -1 return: the length of the key that is not 8 bytes
// 	int    more;   // buf is full; the iterator rests on the record that did not fit
// } hx_scan_result;
//
// // hx_scan copies the records from the iterator's position (after a seek to
// // seek when seek is not NULL) up to and including key last into buf, each as
// // key (8 bytes) | value length (u32, little-endian) | value. It stops on the
// // record whose key is last without stepping past it, so no block beyond the
// // range is read. It returns the number of records copied, or -1 on a key
// // that is not 8 bytes long.
// static int hx_scan(rocksdb_iterator_t* it, const char* seek, uint64_t last,
// 		char* buf, size_t cap, hx_scan_result* res) {
// 	rocksdb_set_perf_level(rocksdb_disable); // see Store.writeRep
// 	if (seek != NULL) rocksdb_iter_seek(it, seek, 8);
// 	size_t used = 0;
// 	int n = 0;
// 	res->more = 0;
// 	while (rocksdb_iter_valid(it)) {
// 		size_t kl, vl;
// 		const unsigned char* k = (const unsigned char*)rocksdb_iter_key(it, &kl);
// 		if (kl != 8) { res->badlen = kl; res->used = used; return -1; }
// 		uint64_t id = 0;
// 		for (int i = 0; i < 8; i++) id = id << 8 | k[i];
// 		if (id > last) break;
// 		const char* v = rocksdb_iter_value(it, &vl);
// 		if (used + 12 + vl > cap) { res->more = 1; res->need = 12 + vl; break; }
// 		memcpy(buf + used, k, 8);
// 		uint32_t l = (uint32_t)vl;
// 		memcpy(buf + used + 8, &l, 4);
// 		memcpy(buf + used + 12, v, vl);
// 		used += 12 + vl;
// 		n++;
// 		if (id == last) break;
// 		rocksdb_iter_next(it);
// 	}
// 	res->used = used;
// 	return n;
// }
import "C"

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/hexstate/hexstate/vertex"
	"github.com/linxGnu/grocksdb"
)

// A range read of a branch's 16 slots through grocksdb's Iterator costs five
// cgo calls per record (Valid, Key, Value, Next and the key's length check)
// plus two allocations; at ~100 records per millisecond that overhead was a
// third of the read. scanRange does the whole loop in one C call that copies
// the records into a Go buffer.

// nativeIterator returns the rocksdb_iterator_t behind it. grocksdb v1.7.14
// (pinned in go.mod) declares Iterator as a struct whose only field is that
// pointer and offers no accessor; TestNativeIteratorLayout guards the layout.
func nativeIterator(it *grocksdb.Iterator) *C.rocksdb_iterator_t {
	return *(**C.rocksdb_iterator_t)(unsafe.Pointer(it))
}

// scanRange positions it at first (seek; with seek nil it starts where it
// is) and calls fn for each record with an ID up to last, in ascending order,
// stopping at the first error of fn. buf is scratch for the copied records;
// the grown buffer is returned for reuse. It
// returns the number of records passed to fn. An error of fn is returned as
// is, a RocksDB error wrapped with the range.
func scanRange(it *grocksdb.Iterator, seek []byte, last vertex.ID, buf []byte, fn func(vertex.ID, []byte) error) ([]byte, int, error) {
	if cap(buf) < 4096 {
		buf = make([]byte, 4096)
	}
	buf = buf[:cap(buf)]
	nit := nativeIterator(it)
	var seekp *C.char // nil: from the iterator's position (a Cursor placed it)
	if seek != nil {
		seekp = (*C.char)(unsafe.Pointer(&seek[0]))
	}
	total := 0
	for {
		var res C.hx_scan_result
		n := C.hx_scan(nit, seekp, C.uint64_t(last), (*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)), &res)
		seekp = nil
		if n < 0 {
			return buf, total, fmt.Errorf("%w: key of %d bytes in column family %q", ErrCorruptKey, int(res.badlen), cfVertices)
		}
		for off, end := 0, int(res.used); off < end; {
			id := vertex.ID(binary.BigEndian.Uint64(buf[off:]))
			l := int(binary.LittleEndian.Uint32(buf[off+8:]))
			rec := buf[off+12 : off+12+l : off+12+l]
			off += 12 + l
			total++
			if err := fn(id, rec); err != nil {
				return buf, total, err
			}
		}
		if res.more == 0 {
			if err := it.Err(); err != nil {
				if seek == nil {
					return buf, total, fmt.Errorf("rocks: read vertices up to %d: %w", last, err)
				}
				return buf, total, fmt.Errorf("rocks: read vertices [%d, %d]: %w", binary.BigEndian.Uint64(seek), last, err)
			}
			return buf, total, nil
		}
		if n == 0 { // one record larger than buf
			buf = make([]byte, max(2*len(buf), int(res.need)))
		}
	}
}
