package vertex

import (
	"encoding/binary"
	"math/bits"
)

// HasChildKeys reports whether rec, a record made by Encode, is a branch's
// with its children's keys.
func HasChildKeys(rec []byte) bool {
	return len(rec) > 0 && rec[0]&3 >= tagBranchV2 && rec[0]&tagChildKey != 0
}

// AppendWithoutChildKeys appends to dst the record Encode makes of rec's
// vertex without its children's keys: rec itself, unless it is a branch's
// with them. rec must have been made by Encode (it is not checked: a record
// read from a backend is checked by Decode).
func AppendWithoutChildKeys(dst, rec []byte) []byte {
	if !HasChildKeys(rec) {
		return append(dst, rec...)
	}
	off, end := childKeysSpan(rec)
	dst = append(dst, rec[0]&^tagChildKey)
	dst = append(dst, rec[1:off]...)
	return append(dst, rec[end:]...)
}

// ChildKeysSize returns how many bytes AppendWithoutChildKeys drops from rec
// (0 for a record without children's keys), under the same condition on rec.
func ChildKeysSize(rec []byte) int {
	if !HasChildKeys(rec) {
		return 0
	}
	off, end := childKeysSpan(rec)
	return end - off
}

// childKeysSpan returns where the children's keys of rec, a branch record
// with them, start and end.
func childKeysSpan(rec []byte) (off, end int) {
	// tag key32 used16, then the child IDs (v1: an sbe per used slot; v2: the
	// base's sbe), then the children's keys (len8 key per used slot).
	used := binary.BigEndian.Uint16(rec[33:35])
	off = 35
	ids := 1
	if rec[0]&3 == tagBranchV1 {
		ids = bits.OnesCount16(used)
	}
	for range ids {
		off += 1 + int(rec[off])
	}
	end = off
	for range bits.OnesCount16(used) {
		end += 1 + int(rec[end])
	}
	return off, end
}
