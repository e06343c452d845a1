package vertex

import (
	"encoding/binary"

	"github.com/hexstate/hexstate/hashkey"
)

// ChildKeys is a branch's children's keys as of its last hash, packed: the bitmap
// of the slots they belong to (2 bytes, big-endian), then for each set bit in
// ascending order a length byte (1..32) and that child's key (a hash or an
// embedded node's RLP). Packed, a bottom branch with two children takes 68 bytes
// rather than the 528 of sixteen Key values. After its 2-byte bitmap it is
// exactly the child-keys field of a branch record. It is never changed once
// built.
type ChildKeys []byte

// PackChildKeys appends to dst the packed keys kids[n] of the slots set in used.
func PackChildKeys(dst []byte, used uint16, kids *[16]hashkey.Key) ChildKeys {
	dst = binary.BigEndian.AppendUint16(dst, used)
	for n := 0; n < 16; n++ {
		if used&(1<<n) != 0 {
			dst = append(dst, byte(kids[n].Len()))
			dst = append(dst, kids[n].Bytes()...)
		}
	}
	return dst
}

// Used is the bitmap of the slots c holds keys for (0 for a nil c).
func (c ChildKeys) Used() uint16 {
	if len(c) < 2 {
		return 0
	}
	return binary.BigEndian.Uint16(c)
}

// Unpack copies the keys c holds into their slots of kids, leaving other slots
// as they are.
func (c ChildKeys) Unpack(kids *[16]hashkey.Key) {
	used, rest := c.Used(), []byte(c)
	if len(rest) >= 2 {
		rest = rest[2:]
	}
	for n := 0; n < 16 && len(rest) > 0; n++ {
		if used&(1<<n) != 0 {
			l := int(rest[0])
			kids[n], _ = hashkey.KeyFromBytes(rest[1 : 1+l])
			rest = rest[1+l:]
		}
	}
}
