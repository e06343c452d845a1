package journal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/hexstate/hexstate/vertex"
)

func testEntry(block uint64, parent Key, n int) *Entry {
	e := &Entry{Key: Key{Block: block, Top: vertex.ID(100 + block)}, Parent: parent}
	e.Key.Root[0] = byte(block)
	for i := 0; i < n; i++ {
		e.Puts = append(e.Puts, vertex.Record{ID: vertex.ID(i + 1), Rec: bytes.Repeat([]byte{byte(i)}, i%7+1)})
	}
	e.Deletes = []vertex.ID{vertex.ID(50 + block)}
	return e
}

// TestAppendOpenTrim round-trips entries, trims to a key and reopens.
func TestAppendOpenTrim(t *testing.T) {
	dir := t.TempDir()
	l, entries, _, err := Open(dir, true)
	if err != nil || len(entries) != 0 {
		t.Fatalf("Open of an empty dir: %v, %d entries", err, len(entries))
	}
	var base Key
	prev := base
	var keys []Key
	for b := uint64(1); b <= 5; b++ {
		e := testEntry(b, prev, int(b))
		if err := l.Append(e); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, e.Key)
		prev = e.Key
	}
	fork := testEntry(9, keys[1], 2) // on block 2
	if err := l.Append(fork); err != nil {
		t.Fatal(err)
	}
	if err := l.Trim(keys[2]); err != nil { // block 3 persisted: keep 4, 5
		t.Fatal(err)
	}
	l.Close()
	_, entries, rep, err := Open(dir, false)
	if err != nil || len(entries) != 2 || entries[0].Key != keys[3] || entries[1].Key != keys[4] || rep.DroppedBytes != 0 {
		t.Fatalf("after the trim: %v, %d entries, %+v", err, len(entries), rep)
	}
	want := testEntry(5, keys[3], 5)
	got := entries[1]
	if len(got.Puts) != len(want.Puts) || !bytes.Equal(got.Puts[4].Rec, want.Puts[4].Rec) || got.Deletes[0] != want.Deletes[0] || got.Parent != keys[3] {
		t.Fatalf("entry 5 read back as %+v", got)
	}
}

// TestDecodeNoPanic decodes bodies with random damage (their CRC fixed up):
// an error or an entry, never a panic.
func TestDecodeNoPanic(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	rec := appendRecord(nil, testEntry(3, Key{}, 20))
	body := rec[recHeader:]
	for i := 0; i < 20000; i++ {
		b := append([]byte(nil), body...)
		for k := rng.IntN(4) + 1; k > 0; k-- {
			b[rng.IntN(len(b))] = byte(rng.Uint32())
		}
		if rng.IntN(3) == 0 {
			b = b[:rng.IntN(len(b))]
		}
		if _, err := decodeBody(b); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("decode error %v does not wrap ErrCorrupt", err)
		}
	}
}

// TestCorruptEntryIsError: a record whose CRC matches but whose body does not
// decode is ErrCorrupt, not a torn tail; a foreign header too.
func TestCorruptEntryIsError(t *testing.T) {
	dir := t.TempDir()
	body := []byte{7, 1, 2, 3}
	rec := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	rec = binary.BigEndian.AppendUint32(rec, crc32.Checksum(body, crcTable))
	rec = append(rec, body...)
	os.WriteFile(filepath.Join(dir, FileName), append(header[:], rec...), 0o644)
	if _, _, _, err := Open(dir, false); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open: %v, want ErrCorrupt", err)
	}
	os.WriteFile(filepath.Join(dir, FileName), []byte("SQLite format 3\x00"), 0o644)
	if _, _, _, err := Open(dir, false); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open of a foreign file: %v, want ErrCorrupt", err)
	}
}
