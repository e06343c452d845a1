package rocks

// #cgo LDFLAGS: -lrocksdb
// #include <stdint.h>
// #include "rocksdb/c.h"
//
// // A read steps forward from where the last one stopped, instead of
// // seeking, when its first ID is at most HX_STEPS IDs ahead (so over at most
// // HX_STEPS records: a step costs about a tenth of a seek).
// enum { HX_STEPS = 16 };
//
// // hx_current sets *id to the ID of it's current key and returns 1, or
// // returns 0 when it has none (or one that is not 8 bytes).
// static int hx_current(rocksdb_iterator_t* it, uint64_t* id) {
// 	if (!rocksdb_iter_valid(it)) return 0;
// 	size_t kl;
// 	const unsigned char* k = (const unsigned char*)rocksdb_iter_key(it, &kl);
// 	if (kl != 8) return 0;
// 	uint64_t v = 0;
// 	for (int i = 0; i < 8; i++) v = v << 8 | k[i];
// 	*id = v;
// 	return 1;
// }
//
// // hx_position leaves it at the first key >= from: stepping forward from its
// // current key when that is at most HX_STEPS IDs behind (each step passes a
// // key < from, so there are at most HX_STEPS), seeking otherwise.
// static void hx_position(rocksdb_iterator_t* it, uint64_t from) {
// 	uint64_t cur;
// 	if (hx_current(it, &cur) && cur <= from && from - cur <= HX_STEPS) {
// 		while (cur < from) {
// 			rocksdb_iter_next(it);
// 			if (!rocksdb_iter_valid(it)) return; // no key >= from
// 			if (!hx_current(it, &cur)) break;    // a bad key: the seek finds it again
// 		}
// 		if (cur >= from) return;
// 	}
// 	char seek[8];
// 	for (int i = 7; i >= 0; i--, from >>= 8) seek[i] = (char)(from & 0xff);
// 	rocksdb_iter_seek(it, seek, 8);
// }
import "C"

// position leaves the cursor's iterator at the first record whose ID is >=
// from, in one cgo call: it steps forward from where the last read stopped
// when that is close, and seeks otherwise.
func (c *Cursor) position(from uint64) {
	C.hx_position(nativeIterator(c.it), C.uint64_t(from))
}
