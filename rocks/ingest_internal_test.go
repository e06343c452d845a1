package rocks

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/hexstate/hexstate/internal/trietest"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
	"github.com/linxGnu/grocksdb"
)

// TestTriePersistsIngested: the batches trie's writer makes are ingestable
// (vertex IDs and leaf keys in order, each once), also when they delete
// accounts and write them again, so with IngestBytes 1 every persist goes in
// as SST files, and the state reads back right after a reopen, leaf index
// included.
func TestTriePersistsIngested(t *testing.T) {
	dir := t.TempDir()
	opts := &Options{BlockCacheBytes: 4 << 20, WriteBufferBytes: 1 << 20, BackgroundJobs: 2, IngestBytes: 1}
	st, err := Open(dir, opts)
	trietest.Must(t, err, "Open")
	db, err := trie.Open(st, nil)
	trietest.Must(t, err, "trie.Open")
	opened := st.ingested.Load() // the new database's first batch, ingested too
	ref := &trietest.BlockState{Accts: map[int]trie.Account{}, Slots: map[int]map[int]uint64{}}
	rng := rand.New(rand.NewPCG(3, 4))
	fr := db.Begin()
	const blocks = 48
	persists := 0
	for b := uint64(1); b <= blocks; b++ {
		ref.Apply(t, fr, rng, int(b), 30)
		if b%3 == 0 { // three blocks a persist: deletions and rewrites of one vertex across frames
			trietest.Must(t, db.Persist(fr, b), "Persist(%d)", b)
			persists++
		}
		fr = fr.Begin()
	}
	trietest.Must(t, db.Close(), "Close")
	ingested := st.ingested.Load() - opened
	t.Logf("%d of %d persists ingested", ingested, persists)
	if ingested != uint64(persists) {
		t.Fatalf("%d of %d persists ingested, want all", ingested, persists)
	}

	st, err = Open(dir, opts)
	trietest.Must(t, err, "reopen")
	db, err = trie.Open(st, nil)
	trietest.Must(t, err, "trie.Open after the reopen")
	defer db.Close()
	if db.Block() != blocks {
		t.Fatalf("reopened at block %d, want %d", db.Block(), blocks)
	}
	ref.Check(t, db.Begin(), nil)
	rep, err := db.Check(t.Context(), nil)
	trietest.Must(t, err, "Check")
	if !rep.OK() || rep.LeafEntries == 0 {
		t.Fatalf("Check after ingested persists: %v (%d leaf entries)", rep.Err(), rep.LeafEntries)
	}
}

// TestIngestPrefixDeleteThenPut: an ingested batch that deletes an account's
// slots by prefix and writes new ones under it keeps the new ones (a range
// tombstone in an ingested file covers only older files' keys), also after
// a full compaction.
func TestIngestPrefixDeleteThenPut(t *testing.T) {
	st, err := Open(t.TempDir(), &Options{BlockCacheBytes: 4 << 20, WriteBufferBytes: 1 << 20, IngestBytes: 1})
	trietest.Must(t, err, "Open")
	defer st.Close()
	key := func(acct, slot byte) []byte {
		k := make([]byte, 64)
		k[0], k[63] = acct, slot
		return k
	}
	acct := key(7, 0)[:32]
	old := &vertex.Batch{Leaves: []vertex.LeafEntry{{Key: key(7, 1), Val: []byte("old1")}, {Key: key(7, 2), Val: []byte("old2")}, {Key: key(8, 1), Val: []byte("other")}}}
	trietest.Must(t, st.Write(old), "Write old")
	renew := &vertex.Batch{LeafPrefixDeletes: [][]byte{acct}, Leaves: []vertex.LeafEntry{{Key: acct, Val: []byte("A")}, {Key: key(7, 2), Val: []byte("new2")}}}
	trietest.Must(t, st.Write(renew), "Write renew")
	if st.ingested.Load() != 2 {
		t.Fatalf("%d batches ingested, want 2", st.ingested.Load())
	}
	want := map[string]string{string(acct): "A", string(key(7, 1)): "", string(key(7, 2)): "new2", string(key(8, 1)): "other"}
	check := func(when string) {
		for k, v := range want {
			got, err := st.Leaf([]byte(k))
			trietest.Must(t, err, "Leaf")
			if string(got) != v || (v == "" && got != nil) {
				t.Errorf("%s: leaf %x = %q, want %q", when, k, got, v)
			}
		}
	}
	check("after the write")
	trietest.Must(t, st.Compact(), "Compact")
	check("after a compaction")
}

// TestIngestSplitsLargeBatch: a batch larger than the split size goes in as
// several disjoint files of about that size, at the bottom level of an empty
// store, and reads back whole.
func TestIngestSplitsLargeBatch(t *testing.T) {
	st, err := Open(t.TempDir(), &Options{BlockCacheBytes: 4 << 20, IngestBytes: 1, NoCompression: true})
	trietest.Must(t, err, "Open")
	defer st.Close()
	st.ingestSplit = 256 << 10
	val := make([]byte, 200)
	b := &vertex.Batch{}
	for id := vertex.ID(1); id <= 10_000; id++ { // ~2.2 MB of records: 9 files
		b.Puts = append(b.Puts, vertex.Record{ID: id, Rec: val})
	}
	trietest.Must(t, st.Write(b), "Write")
	if st.ingested.Load() != 1 {
		t.Fatalf("%d writes ingested, want 1", st.ingested.Load())
	}
	files := st.db.GetPropertyCF("rocksdb.num-files-at-level6", st.cfVertex)
	if files != "9" {
		t.Fatalf("%s files at the bottom level, want 9 of 256 KiB", files)
	}
	n := 0
	trietest.Must(t, st.VertexRange(1, 20_000, func(id vertex.ID, rec []byte) error {
		if n++; id != vertex.ID(n) || len(rec) != len(val) {
			t.Fatalf("record %d: vertex %d of %d bytes", n, id, len(rec))
		}
		return nil
	}), "VertexRange")
	if n != 10_000 {
		t.Fatalf("read back %d records, want 10,000", n)
	}
}

// TestLoadBatchIngested: a small batch goes through the write-ahead log
// unless it is marked as a load's (vertex.Batch.Load), which is ingested at
// the bottom level whatever its size; the records read back either way.
func TestLoadBatchIngested(t *testing.T) {
	st, err := Open(t.TempDir(), nil) // the default IngestBytes, 16 MiB
	trietest.Must(t, err, "Open")
	defer st.Close()
	opened := st.ingested.Load()
	trietest.Must(t, st.Write(&vertex.Batch{Puts: []vertex.Record{{ID: 1, Rec: []byte("one")}}}), "Write")
	if n := st.ingested.Load() - opened; n != 0 {
		t.Fatalf("a small batch: %d ingested, want 0", n)
	}
	load := &vertex.Batch{Load: true, Puts: []vertex.Record{{ID: 5, Rec: []byte("five")}, {ID: 6, Rec: []byte("six")}}}
	trietest.Must(t, st.Write(load), "Write")
	if n := st.ingested.Load() - opened; n != 1 {
		t.Fatalf("a load's batch: %d ingested, want 1", n)
	}
	if files := st.db.GetPropertyCF("rocksdb.num-files-at-level6", st.cfVertex); files == "0" {
		t.Fatal("the load's file is not at the bottom level")
	}
	for id, want := range map[vertex.ID]string{1: "one", 5: "five", 6: "six"} {
		rec, err := st.Vertex(id)
		trietest.Must(t, err, "Vertex %d", id)
		if string(rec) != want {
			t.Fatalf("vertex %d: %q, want %q", id, rec, want)
		}
	}
}

// TestIngestedFileFormats: the same records ingested into an empty range land
// on the bottom level written for it (ZSTD, Ribbon filters), and ingested
// again over them land on level 0 written as a flush writes (LZ4, Bloom
// filters): the level-0 file has the larger data and filter blocks.
func TestIngestedFileFormats(t *testing.T) {
	st, err := Open(t.TempDir(), &Options{BlockCacheBytes: 4 << 20, IngestBytes: 1})
	trietest.Must(t, err, "Open")
	defer st.Close()
	val := make([]byte, 200)
	for i := range val {
		val[i] = byte(i % 7)
	}
	for range 2 {
		b := &vertex.Batch{}
		for id := vertex.ID(1); id <= 10_000; id++ {
			b.Puts = append(b.Puts, vertex.Record{ID: id, Rec: val})
		}
		trietest.Must(t, st.Write(b), "Write")
	}
	prop := func(level, name string) int {
		props := st.db.GetPropertyCF("rocksdb.aggregated-table-properties-at-level"+level, st.cfVertex)
		for _, kv := range strings.Split(props, "; ") {
			if k, v, ok := strings.Cut(kv, "="); ok && k == name {
				n, err := strconv.Atoi(v)
				trietest.Must(t, err, "%s of level %s: %q", name, level, v)
				return n
			}
		}
		t.Fatalf("no %q for level %s in %q", name, level, props)
		return 0
	}
	if n0, n6 := prop("0", "# entries"), prop("6", "# entries"); n0 != 10_000 || n6 != 10_000 {
		t.Fatalf("%d entries on level 0 and %d on level 6, want 10,000 each", n0, n6)
	}
	if f0, f6 := prop("0", "filter block size"), prop("6", "filter block size"); f0 <= f6 {
		t.Errorf("filter blocks %d bytes on level 0, %d on level 6: want Bloom (larger) on level 0, Ribbon at the bottom", f0, f6)
	}
	if d0, d6 := prop("0", "data block size"), prop("6", "data block size"); d0 <= d6 {
		t.Errorf("data blocks %d bytes on level 0, %d on level 6: want LZ4 (larger) on level 0, ZSTD at the bottom", d0, d6)
	}
}

// TestLeafIndexCopyAtBottom: a copy's leaf index, given by CopyLeafIndex
// after the copy's compaction, is ingested at the bottom level: the
// compaction drops the tombstones that emptied the index (a trivial move
// would keep them there, and every ingested file would land in level 0).
func TestLeafIndexCopyAtBottom(t *testing.T) {
	accts := trietest.StateAccounts(3000, 8)
	src, err := trie.Open(trie.NewMemoryBackend(), nil)
	trietest.Must(t, err, "trie.Open")
	trietest.LoadState(t, src, accts, 9)
	// Batches of 16 KiB and more are ingested: the index's entries, not the
	// marker written after them.
	st, err := Open(t.TempDir(), &Options{BlockCacheBytes: 4 << 20, IngestBytes: 16 << 10})
	trietest.Must(t, err, "Open")
	dst, err := trie.Open(st, nil)
	trietest.Must(t, err, "trie.Open")
	defer dst.Close()
	_, err = dst.CopyFrom(context.Background(), src, trie.CopyOptions{Block: src.Block()})
	trietest.Must(t, err, "CopyFrom")
	n, err := dst.CopyLeafIndex(context.Background(), src)
	trietest.Must(t, err, "CopyLeafIndex")
	if n < uint64(len(accts)) {
		t.Fatalf("%d entries copied for %d accounts", n, len(accts))
	}
	files := make([]string, 7)
	for l := range files {
		files[l] = st.db.GetPropertyCF("rocksdb.num-files-at-level"+strconv.Itoa(l), st.cfLeaves)
	}
	if files[0] != "0" || files[6] == "0" {
		t.Fatalf("leaf index files per level %v: want them all at the bottom", files)
	}
}

// TestIngestFileFromParts: a family's records are handed to the SST writer a
// part (repPart) at a time, so that the batch representation stays that
// size whatever the batch's: a batch of several parts per family, a deleted
// prefix among its leaves, goes in as one file per family and reads back
// whole.
func TestIngestFileFromParts(t *testing.T) {
	st, err := Open(t.TempDir(), &Options{BlockCacheBytes: 4 << 20, IngestBytes: 1, NoCompression: true})
	trietest.Must(t, err, "Open")
	defer st.Close()
	const n = 60_000
	val := make([]byte, 200)
	b := &vertex.Batch{LeafPrefixDeletes: [][]byte{make([]byte, 32)}}
	for id := vertex.ID(1); id <= n; id++ { // ~13 MB of records: 4 parts
		b.Puts = append(b.Puts, vertex.Record{ID: id, Rec: val})
		k := make([]byte, 64)
		k[0] = 1
		binary.BigEndian.PutUint64(k[56:], uint64(id))
		b.Leaves = append(b.Leaves, vertex.LeafEntry{Key: k, Val: []byte(strconv.Itoa(int(id)))}) // ~5 MB: 2 parts
	}
	trietest.Must(t, st.Write(b), "Write")
	if st.ingested.Load() != 1 {
		t.Fatalf("%d writes ingested, want 1", st.ingested.Load())
	}
	if kept := len(st.rep.mem.Bytes()); kept > (batchRepHeader+repPart+repSlack)*5/4 {
		t.Fatalf("the batch representation kept %d bytes, want about a part's (%d)", kept, repPart)
	}
	for _, cf := range []*grocksdb.ColumnFamilyHandle{st.cfVertex, st.cfLeaves} {
		if files := st.db.GetPropertyCF("rocksdb.num-files-at-level6", cf); files != "1" {
			t.Fatalf("%s: %s files at the bottom level, want 1", cf.Name(), files)
		}
	}
	got := 0
	trietest.Must(t, st.VertexRange(1, 2*n, func(id vertex.ID, rec []byte) error {
		if got++; id != vertex.ID(got) || len(rec) != len(val) {
			t.Fatalf("record %d: vertex %d of %d bytes", got, id, len(rec))
		}
		return nil
	}), "VertexRange")
	if got != n {
		t.Fatalf("read back %d records, want %d", got, n)
	}
	for _, i := range []int{0, n / 2, n - 1} {
		l := b.Leaves[i]
		v, err := st.Leaf(l.Key)
		trietest.Must(t, err, "Leaf")
		if string(v) != string(l.Val) {
			t.Fatalf("leaf %d = %q, want %q", i, v, l.Val)
		}
	}
}
