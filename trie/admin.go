package trie

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/vertex"
)

// admin is the database's one admin record (docs/format.md §3), revision 2:
//
//	"hxst" | format u8 | records u8 | top u64 | block u64 | root [32] | crc32c u32   (58 bytes)
//
// Revision 1, written before the record variant was recorded, lacks the
// records byte (57 bytes); it decodes with records 0 ("not recorded").
// top is the ID allocator's last handed-out ID; root is the persisted state
// root and block the number it was persisted at; the CRC covers the bytes
// before it.
type admin struct {
	format  vertex.Format
	records vertex.Records // 0: a revision-1 record, which names no variant
	top     vertex.ID
	block   uint64
	root    hashkey.Hash
}

const (
	adminSize   = 4 + 1 + 1 + 8 + 8 + 32 + 4 // revision 2
	adminSizeV1 = adminSize - 1              // revision 1: no records byte
)

var (
	adminMagic = [4]byte{'h', 'x', 's', 't'}
	crcTable   = crc32.MakeTable(crc32.Castagnoli)
)

// encode returns the revision-2 record of a.
func (a *admin) encode() []byte {
	b := make([]byte, 0, adminSize)
	b = append(b, adminMagic[:]...)
	b = append(b, byte(a.format), byte(a.records))
	b = binary.BigEndian.AppendUint64(b, uint64(a.top))
	b = binary.BigEndian.AppendUint64(b, a.block)
	b = append(b, a.root[:]...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
}

// decodeAdmin decodes an admin record of either revision, told apart by its
// length. It checks the magic, the CRC and that a revision-2 record names a
// variant (not 0), not which format or variant.
func decodeAdmin(b []byte) (admin, error) {
	var a admin
	if len(b) != adminSize && len(b) != adminSizeV1 {
		return a, fmt.Errorf("%w: %d bytes, want %d (or %d, revision 1)", ErrCorruptAdmin, len(b), adminSize, adminSizeV1)
	}
	if [4]byte(b[:4]) != adminMagic {
		return a, fmt.Errorf("%w: magic %q, want %q", ErrCorruptAdmin, b[:4], adminMagic[:])
	}
	n := len(b)
	if got, want := binary.BigEndian.Uint32(b[n-4:]), crc32.Checksum(b[:n-4], crcTable); got != want {
		return a, fmt.Errorf("%w: checksum %08x, want %08x", ErrCorruptAdmin, got, want)
	}
	a.format = vertex.Format(b[4])
	rest := b[5:]
	if n == adminSize {
		if b[5] == 0 {
			return a, fmt.Errorf("%w: record variant 0 in a revision-2 record", ErrCorruptAdmin)
		}
		a.records, rest = vertex.Records(b[5]), b[6:]
	}
	a.top = vertex.ID(binary.BigEndian.Uint64(rest))
	a.block = binary.BigEndian.Uint64(rest[8:])
	copy(a.root[:], rest[16:48])
	return a, nil
}

// recordsFor returns the record variant a database with admin record a
// (nil: a new database) is opened with, given the requested variant want (0:
// follow the database). A database follows its recorded variant: requesting
// another is a *RecordsError. A revision-1 record names none (such databases
// may hold both kinds of records): the request decides, and without one
// vertex.ChildKeyCopies, what the code that wrote revision 1 wrote by default.
func recordsFor(a *admin, want vertex.Records) (vertex.Records, error) {
	if want != 0 && !want.Valid() {
		return 0, &RecordsError{Want: want}
	}
	switch {
	case a == nil && want == 0:
		return vertex.DefaultRecords, nil
	case a == nil:
		return want, nil
	case a.records == 0 && want == 0:
		return vertex.ChildKeyCopies, nil
	case a.records == 0:
		return want, nil
	case !a.records.Valid() || (want != 0 && want != a.records):
		return 0, &RecordsError{Found: a.records, Want: want}
	}
	return a.records, nil
}
