package rocks_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/internal/trietest"
	"github.com/hexstate/hexstate/rocks"
	"github.com/hexstate/hexstate/trie"
	"github.com/holiman/uint256"
	"github.com/linxGnu/grocksdb"
)

// checkLeafIndex fails t unless db has a leaf index (when want) that holds
// exactly the persisted state's leaves: after a crash, the index must match
// the records the same atomic batches wrote.
func checkLeafIndex(t *testing.T, k int, db *trie.DB, want bool) {
	t.Helper()
	if db.HasLeafIndex() != want {
		t.Fatalf("kill %d: HasLeafIndex %v, want %v", k, db.HasLeafIndex(), want)
	}
	rep, err := db.Check(context.Background(), nil)
	if err != nil {
		t.Fatalf("kill %d: Check: %v", k, err)
	}
	if !rep.OK() {
		t.Fatalf("kill %d: Check: %v", k, rep.Err())
	}
	if want && db.Block() > 0 && rep.LeafEntries == 0 {
		t.Fatalf("kill %d: block %d with an empty leaf index", k, db.Block())
	}
}

// TestStoreWithoutLeafIndex: a store written before the leaf index existed
// (no "leaves" column family; made here by dropping it) opens read-only and
// read-write, reads right through the trie, and takes BuildLeafIndex.
func TestStoreWithoutLeafIndex(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	st, err := rocks.Open(dir, nil)
	trietest.Must(t, err, "Open")
	db, err := trie.Open(st, nil)
	trietest.Must(t, err, "trie.Open")
	a := hashkey.Keccak256([]byte("a"))
	fr := db.Begin()
	trietest.Must(t, fr.UpdateAccount(a, trie.Account{Nonce: 7}), "UpdateAccount")
	trietest.Must(t, fr.UpdateStorage(a, a, uint256.NewInt(9)), "UpdateStorage")
	trietest.Must(t, db.Persist(fr, 1), "Persist")
	trietest.Must(t, db.Close(), "Close")

	o := grocksdb.NewDefaultOptions()
	names := []string{"default", "vertices", "leaves"}
	raw, cfs, err := grocksdb.OpenDbColumnFamilies(o, dir, names, []*grocksdb.Options{o, o, o})
	trietest.Must(t, err, "raw open")
	trietest.Must(t, raw.DropColumnFamily(cfs[2]), "dropping the leaves column family")
	for _, cf := range cfs {
		cf.Destroy()
	}
	raw.Close()
	o.Destroy()

	read := func(ro bool) *trie.DB {
		st, err := rocks.Open(dir, &rocks.Options{ReadOnly: ro})
		trietest.Must(t, err, "Open (read-only %v)", ro)
		db, err := trie.Open(st, nil)
		trietest.Must(t, err, "trie.Open (read-only %v)", ro)
		if db.HasLeafIndex() {
			t.Fatalf("read-only %v: HasLeafIndex on a store without one", ro)
		}
		fr := db.Begin()
		acc, ok, err := fr.Account(a)
		v, serr := fr.Storage(a, a)
		if err != nil || serr != nil || !ok || acc.Nonce != 7 || v.Uint64() != 9 {
			t.Fatalf("read-only %v: account %+v %v %v, slot %v %v", ro, acc, ok, err, &v, serr)
		}
		return db
	}
	trietest.Must(t, read(true).Close(), "Close")
	db = read(false)
	if _, err := db.BuildLeafIndex(context.Background()); err != nil {
		t.Fatalf("BuildLeafIndex: %v", err)
	}
	checkLeafIndex(t, 0, db, true)
	trietest.Must(t, db.Close(), "Close")
}
