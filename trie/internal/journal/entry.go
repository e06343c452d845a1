package journal

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/vertex"
)

// Key identifies a state in the journal: the block number it was journalled
// (or persisted) under, its state root and its allocator top. A frame's entry
// names its own Key and its parent's; replay links entries by these keys.
type Key struct {
	Block uint64
	Root  hashkey.Hash
	Top   vertex.ID
}

// Entry is one journalled frame: the state Key it produces, the state Parent
// it applies to, the vertex records it wrote (Puts, by ID) and the vertices
// it deleted.
type Entry struct {
	Key, Parent Key
	Puts        []vertex.Record
	Deletes     []vertex.ID
}

const (
	kindFrame  = 1
	keySize    = 8 + 32 + 8
	bodyFixed  = 1 + 2*keySize + 4 + 4
	recHeader  = 4 + 4 // body length u32 | crc32c u32 of the body
	maxRecBody = 1 << 31
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

func appendKey(b []byte, k *Key) []byte {
	b = binary.BigEndian.AppendUint64(b, k.Block)
	b = append(b, k.Root[:]...)
	return binary.BigEndian.AppendUint64(b, uint64(k.Top))
}

func readKey(b []byte) Key {
	var k Key
	k.Block = binary.BigEndian.Uint64(b)
	copy(k.Root[:], b[8:40])
	k.Top = vertex.ID(binary.BigEndian.Uint64(b[40:]))
	return k
}

// appendRecord appends e's record (header and body) to dst.
func appendRecord(dst []byte, e *Entry) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, recHeader)...)
	body := len(dst)
	dst = append(dst, kindFrame)
	dst = appendKey(dst, &e.Key)
	dst = appendKey(dst, &e.Parent)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(e.Puts)))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(e.Deletes)))
	for _, r := range e.Puts {
		dst = binary.BigEndian.AppendUint64(dst, uint64(r.ID))
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(r.Rec)))
		dst = append(dst, r.Rec...)
	}
	for _, id := range e.Deletes {
		dst = binary.BigEndian.AppendUint64(dst, uint64(id))
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-body))
	binary.BigEndian.PutUint32(dst[start+4:], crc32.Checksum(dst[body:], crcTable))
	return dst
}

// decodeBody decodes a record body whose checksum matched. The entry's
// records alias body.
func decodeBody(body []byte) (Entry, error) {
	var e Entry
	if len(body) < bodyFixed {
		return e, fmt.Errorf("%w: entry of %d bytes, below the %d of its fixed part", ErrCorrupt, len(body), bodyFixed)
	}
	if body[0] != kindFrame {
		return e, fmt.Errorf("%w: entry kind %d", ErrCorrupt, body[0])
	}
	e.Key = readKey(body[1:])
	e.Parent = readKey(body[1+keySize:])
	nPuts := binary.BigEndian.Uint32(body[1+2*keySize:])
	nDels := binary.BigEndian.Uint32(body[1+2*keySize+4:])
	rest := body[bodyFixed:]
	if uint64(nPuts)*12+uint64(nDels)*8 > uint64(len(rest)) {
		return e, fmt.Errorf("%w: %d records and %d deletions do not fit in %d bytes", ErrCorrupt, nPuts, nDels, len(rest))
	}
	e.Puts = make([]vertex.Record, nPuts)
	for i := range e.Puts {
		if len(rest) < 12 {
			return e, fmt.Errorf("%w: record %d cut short", ErrCorrupt, i)
		}
		id := vertex.ID(binary.BigEndian.Uint64(rest))
		n := binary.BigEndian.Uint32(rest[8:])
		rest = rest[12:]
		if uint64(n) > uint64(len(rest)) {
			return e, fmt.Errorf("%w: record %d (vertex %d) of %d bytes, %d left", ErrCorrupt, i, id, n, len(rest))
		}
		e.Puts[i] = vertex.Record{ID: id, Rec: rest[:n:n]}
		rest = rest[n:]
	}
	if uint64(len(rest)) != uint64(nDels)*8 {
		return e, fmt.Errorf("%w: %d bytes for %d deletions", ErrCorrupt, len(rest), nDels)
	}
	e.Deletes = make([]vertex.ID, nDels)
	for i := range e.Deletes {
		e.Deletes[i] = vertex.ID(binary.BigEndian.Uint64(rest[8*i:]))
	}
	return e, nil
}
