package trie

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/vertex"
)

// admin is the database's one admin record (docs/format.md):
//
//	"hxst" | format u8 | top u64 | block u64 | root [32] | crc32c u32   (57 bytes)
//
// top is the ID allocator's last handed-out ID; root is the persisted state root
// and block the number it was persisted at; the CRC covers the bytes before it.
type admin struct {
	format vertex.Format
	top    vertex.ID
	block  uint64
	root   hashkey.Hash
}

const adminSize = 4 + 1 + 8 + 8 + 32 + 4

var (
	adminMagic = [4]byte{'h', 'x', 's', 't'}
	crcTable   = crc32.MakeTable(crc32.Castagnoli)
)

func (a *admin) encode() []byte {
	b := make([]byte, 0, adminSize)
	b = append(b, adminMagic[:]...)
	b = append(b, byte(a.format))
	b = binary.BigEndian.AppendUint64(b, uint64(a.top))
	b = binary.BigEndian.AppendUint64(b, a.block)
	b = append(b, a.root[:]...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
}

func decodeAdmin(b []byte) (admin, error) {
	var a admin
	if len(b) != adminSize {
		return a, fmt.Errorf("%w: %d bytes, want %d", ErrCorruptAdmin, len(b), adminSize)
	}
	if [4]byte(b[:4]) != adminMagic {
		return a, fmt.Errorf("%w: magic %q, want %q", ErrCorruptAdmin, b[:4], adminMagic[:])
	}
	if got, want := binary.BigEndian.Uint32(b[adminSize-4:]), crc32.Checksum(b[:adminSize-4], crcTable); got != want {
		return a, fmt.Errorf("%w: checksum %08x, want %08x", ErrCorruptAdmin, got, want)
	}
	a.format = vertex.Format(b[4])
	a.top = vertex.ID(binary.BigEndian.Uint64(b[5:]))
	a.block = binary.BigEndian.Uint64(b[13:])
	copy(a.root[:], b[21:53])
	return a, nil
}
