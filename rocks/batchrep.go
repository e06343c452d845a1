package rocks

import (
	"encoding/binary"
	"runtime"

	"github.com/hexstate/hexstate/internal/manual"
	"github.com/hexstate/hexstate/vertex"
)

// batchRep builds a batch in RocksDB's own WriteBatch representation
// (db/write_batch.cc, db/dbformat.h), which rocksdb_writebatch_create_from
// takes in one C call: a Write of a 64-block persist puts about 1.1 million
// operations, and adding them one cgo call at a time (PutCF) cost a third of
// what RocksDB's own write of them did.
//
//	rep    := sequence fixed64 (0: the write assigns it) | count fixed32 | record*
//	record := tag | [column family ID varint32, when not 0] | key varstring | [value varstring]
//
// TestBatchRepMatchesRocksDB checks the bytes against a WriteBatch filled
// through the C API.
//
// The buffer lives outside the Go heap (internal/manual): kept from one
// persist to the next it is a long-lived, pointer-free buffer of up to
// maxKeptRep bytes, which in the heap would count as live and let the
// collector grow the heap by as much again in garbage.
type batchRep struct {
	buf   []byte
	count uint32
	mem   manual.Region // buf's memory, unless an append outgrew it
}

// RocksDB's record tags: the plain ones apply to the default column family,
// the others carry the family's ID.
const (
	tagDeletion             = 0x0
	tagValue                = 0x1
	tagColumnFamilyDeletion = 0x4
	tagColumnFamilyValue    = 0x5
	tagColumnFamilyRangeDel = 0xE
	tagRangeDeletion        = 0xF
	batchRepHeader          = 12
)

// maxKeptRep is the largest batch buffer Write keeps for the next batch. A
// client persisting every few dozen blocks writes batches of tens of
// megabytes: a fresh buffer each time costs page faults and zeroing in the
// background writer and pulls the next garbage collection forward
// (docs/benchmarks.md §9). A bulk load's batch (gigabytes) is not kept.
const maxKeptRep = 256 << 20

// reset empties r, keeping its buffer, and makes room for about size bytes
// (a quarter more when it grows, so that the next, slightly larger batch
// fits too).
func (r *batchRep) reset(size int) {
	if need := batchRepHeader + size; need > len(r.mem.Bytes()) {
		r.mem.Free()
		r.mem = manual.New(need + need/4)
	}
	r.buf = r.mem.Bytes()[:batchRepHeader:len(r.mem.Bytes())]
	clear(r.buf)
	r.count = 0
}

// release drops r's buffer when it is larger than maxKeptRep (a bulk load's),
// so that it is not kept for the next batch.
func (r *batchRep) release() {
	if len(r.mem.Bytes()) > maxKeptRep {
		r.free()
	}
}

// free drops r's buffer. Nothing may hold r's bytes afterwards.
func (r *batchRep) free() {
	r.mem.Free()
	*r = batchRep{}
}

// op starts a record: the tag plain for the default family, else tag withCF
// and the family's ID. Every 1,024 records it yields the processor: a
// persist's batch is built in the background beside the next blocks, and a
// 64-block one takes ~100 ms (see trie's pacer).
func (r *batchRep) op(plain, withCF byte, cf uint32) {
	if cf == 0 {
		r.buf = append(r.buf, plain)
	} else {
		r.buf = append(r.buf, withCF)
		r.buf = binary.AppendUvarint(r.buf, uint64(cf))
	}
	if r.count++; r.count%1024 == 0 {
		runtime.Gosched()
	}
}

// str appends b as a varstring.
func (r *batchRep) str(b []byte) {
	r.buf = binary.AppendUvarint(r.buf, uint64(len(b)))
	r.buf = append(r.buf, b...)
}

// put adds a Put of key to value in column family cf.
func (r *batchRep) put(cf uint32, key, value []byte) {
	r.op(tagValue, tagColumnFamilyValue, cf)
	r.str(key)
	r.str(value)
}

// putRecord adds a Put of key to what b stores for rec, one of b's Puts'
// records (vertex.Batch.AppendRecord), in column family cf.
func (r *batchRep) putRecord(cf uint32, key []byte, b *vertex.Batch, rec []byte) {
	r.op(tagValue, tagColumnFamilyValue, cf)
	r.str(key)
	r.buf = binary.AppendUvarint(r.buf, uint64(b.RecordSize(rec)))
	r.buf = b.AppendRecord(r.buf, rec)
}

// del adds a Delete of key in column family cf.
func (r *batchRep) del(cf uint32, key []byte) {
	r.op(tagDeletion, tagColumnFamilyDeletion, cf)
	r.str(key)
}

// delRange adds a DeleteRange of [begin, end) in column family cf.
func (r *batchRep) delRange(cf uint32, begin, end []byte) {
	r.op(tagRangeDeletion, tagColumnFamilyRangeDel, cf)
	r.str(begin)
	r.str(end)
}

// bytes returns the representation, its count set.
func (r *batchRep) bytes() []byte {
	binary.LittleEndian.PutUint32(r.buf[8:batchRepHeader], r.count)
	return r.buf
}

// repSize estimates the representation's size of b (records, deletions and
// index entries with their keys and framing).
func repSize(b *vertex.Batch) int {
	n := 64 + len(b.Admin)
	for _, r := range b.Puts {
		n += 16 + b.RecordSize(r.Rec)
	}
	n += 16 * len(b.Deletes)
	for _, l := range b.Leaves {
		n += 8 + len(l.Key) + len(l.Val)
	}
	return n + 80*len(b.LeafPrefixDeletes)
}
