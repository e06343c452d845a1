package rocks

/*
#cgo LDFLAGS: -lrocksdb
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <rocksdb/c.h>

enum { HX_DONE = 0, HX_FULL = 1, HX_BADKEY = 2, HX_ERROR = 3 };

// A read steps forward from where the last one stopped, instead of seeking,
// when its first ID is at most HX_STEPS IDs ahead (so over at most HX_STEPS
// records: a step costs about a tenth of a seek).
enum { HX_STEPS = 16 };

typedef struct {
	size_t   used;   // bytes of buf filled
	uint64_t next;   // HX_FULL: the ID to read on from
	size_t   need;   // HX_FULL: the bytes the record at next takes
	size_t   badlen; // HX_BADKEY: the length of the bad key
	int      status;
} hx_read;

static uint64_t hx_be64(const char* k) {
	uint64_t v = 0;
	for (int i = 0; i < 8; i++) v = (v << 8) | (unsigned char)k[i];
	return v;
}

// hx_current sets *id to the ID of it's current key and returns 1, or
// returns 0 when it has none (or one that is not 8 bytes).
static int hx_current(rocksdb_iterator_t* it, uint64_t* id) {
	if (!rocksdb_iter_valid(it)) return 0;
	size_t kl;
	const char* k = rocksdb_iter_key(it, &kl);
	if (kl != 8) return 0;
	*id = hx_be64(k);
	return 1;
}

// hx_position leaves it at the first key >= from: stepping forward from its
// current key when that is at most HX_STEPS IDs behind (each step passes a
// key < from, so there are at most HX_STEPS), seeking otherwise.
static void hx_position(rocksdb_iterator_t* it, uint64_t from) {
	uint64_t cur;
	if (hx_current(it, &cur) && cur <= from && from - cur <= HX_STEPS) {
		while (cur < from) {
			rocksdb_iter_next(it);
			if (!rocksdb_iter_valid(it)) return; // no key >= from
			if (!hx_current(it, &cur)) break;    // a bad key: the seek finds it again
		}
		if (cur >= from) return;
	}
	char seek[8];
	for (int i = 7; i >= 0; i--, from >>= 8) seek[i] = (char)(from & 0xff);
	rocksdb_iter_seek(it, seek, 8);
}

// hx_cursor_read copies the records with IDs in [from, last] into buf, each
// as its 8-byte key, its length (uint32, native order) and its bytes, and
// leaves it at the last record copied (or past the range).
static void hx_cursor_read(rocksdb_iterator_t* it, uint64_t from, uint64_t last, char* buf, size_t cap, hx_read* r) {
	r->used = 0;
	r->status = HX_DONE;
	hx_position(it, from);
	while (rocksdb_iter_valid(it)) {
		size_t kl, vl;
		const char* k = rocksdb_iter_key(it, &kl);
		if (kl != 8) {
			r->status = HX_BADKEY;
			r->badlen = kl;
			return;
		}
		uint64_t id = hx_be64(k);
		if (id > last) return;
		const char* v = rocksdb_iter_value(it, &vl);
		if (vl > UINT32_MAX) {
			r->status = HX_ERROR;
			return;
		}
		if (r->used + 12 + vl > cap) {
			r->status = HX_FULL;
			r->next = id;
			r->need = 12 + vl;
			return;
		}
		uint32_t l = (uint32_t)vl;
		memcpy(buf + r->used, k, 8);
		memcpy(buf + r->used + 8, &l, 4);
		memcpy(buf + r->used + 12, v, vl);
		r->used += 12 + vl;
		if (id == last) return; // do not step past the range: that could read another block
		rocksdb_iter_next(it);
	}
	char* err = NULL;
	rocksdb_iter_get_error(it, &err);
	if (err != NULL) {
		free(err);
		r->status = HX_ERROR;
	}
}

*/
import "C"

import (
	"encoding/binary"
	"unsafe"

	"github.com/hexstate/hexstate/vertex"
)

// The outcomes of a native read.
const (
	readDone   = C.HX_DONE   // the range is read
	readFull   = C.HX_FULL   // the buffer is full: read on from next
	readBadKey = C.HX_BADKEY // a key that is not 8 bytes
	readError  = C.HX_ERROR  // the iterator failed (or a record of 4 GiB)
)

// cursorHeader is the size of a record's header in a cursor's buffer: its
// 8-byte big-endian key, then its length as a native-order uint32.
const cursorHeader = 12

// nativeRead is what one native read reports.
type nativeRead struct {
	status int
	used   int    // bytes of the buffer filled
	next   uint64 // readFull: the ID to read on from
	need   int    // readFull: the bytes the record at next takes
	badLen int    // readBadKey: the length of the bad key
}

// read copies the records with IDs in [from, last] into c.buf, in one cgo
// call.
func (c *Cursor) read(from, last uint64) nativeRead {
	var r C.hx_read
	C.hx_cursor_read((*C.rocksdb_iterator_t)(c.nat), C.uint64_t(from), C.uint64_t(last),
		(*C.char)(unsafe.Pointer(&c.buf[0])), C.size_t(len(c.buf)), &r)
	return nativeRead{status: int(r.status), used: int(r.used), next: uint64(r.next), need: int(r.need), badLen: int(r.badlen)}
}

// decodeCursorHeader returns the ID and the record length of the header at
// the start of b.
func decodeCursorHeader(b []byte) (vertex.ID, int) {
	return vertex.ID(binary.BigEndian.Uint64(b)), int(binary.NativeEndian.Uint32(b[8:]))
}
