package rocks

import (
	"bytes"
	"testing"

	"github.com/hexstate/hexstate/vertex"
	"github.com/linxGnu/grocksdb"
)

// TestBatchRepMatchesRocksDB: the representation Store.Write builds in Go is
// byte for byte what RocksDB builds through its C API for the same operations
// (puts, deletes and range deletions, in the default and in other column
// families, a large value's two-byte length), and a store written through it
// reads back what was written.
func TestBatchRepMatchesRocksDB(t *testing.T) {
	s := mustOpen(t, t.TempDir(), testOptions())
	b := &vertex.Batch{
		Puts:              []vertex.Record{{ID: 1, Rec: []byte("one")}, {ID: 300, Rec: bytes.Repeat([]byte{7}, 200)}},
		Deletes:           []vertex.ID{5, 1 << 40},
		Admin:             []byte("admin record"),
		LeafReset:         true,
		LeafPrefixDeletes: [][]byte{bytes.Repeat([]byte{0xab}, 32)},
		Leaves: []vertex.LeafEntry{
			{Key: bytes.Repeat([]byte{1}, 32), Val: []byte{9, 9}},
			{Key: bytes.Repeat([]byte{2}, 64)},
		},
	}
	s.wmu.Lock()
	s.fill(b)
	got := bytes.Clone(s.rep.bytes())
	s.wmu.Unlock()

	wb := grocksdb.NewWriteBatch()
	defer wb.Destroy()
	var k [8]byte
	for _, r := range b.Puts {
		putKey(k[:], r.ID)
		wb.PutCF(s.cfVertex, k[:], r.Rec)
	}
	for _, id := range b.Deletes {
		putKey(k[:], id)
		wb.DeleteCF(s.cfVertex, k[:])
	}
	wb.PutCF(s.cfAdmin, adminKey, b.Admin)
	wb.DeleteRangeCF(s.cfLeaves, nil, leafSpan)
	p := b.LeafPrefixDeletes[0]
	wb.DeleteRangeCF(s.cfLeaves, append(bytes.Clone(p), 0), append(bytes.Clone(p), leafSpan[:33]...))
	wb.PutCF(s.cfLeaves, b.Leaves[0].Key, b.Leaves[0].Val)
	wb.DeleteCF(s.cfLeaves, b.Leaves[1].Key)
	if want := wb.Data(); !bytes.Equal(got, want) {
		t.Fatalf("representation differs from RocksDB's:\n got %x\nwant %x", got, want)
	}
	if s.cfAdmin.ID() != 0 || s.cfVertex.ID() == 0 {
		t.Fatalf("column family IDs admin %d, vertex %d: the test wants the default family and another", s.cfAdmin.ID(), s.cfVertex.ID())
	}

	if err := s.Write(b); err != nil {
		t.Fatal(err)
	}
	if rec, err := s.Vertex(300); err != nil || !bytes.Equal(rec, b.Puts[1].Rec) {
		t.Fatalf("Vertex(300) = %x, %v", rec, err)
	}
	if v, err := s.Leaf(b.Leaves[0].Key); err != nil || !bytes.Equal(v, b.Leaves[0].Val) {
		t.Fatalf("Leaf = %x, %v", v, err)
	}
}
