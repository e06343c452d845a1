package rocks_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/hexstate/hexstate/rocks"
	"github.com/hexstate/hexstate/trie"
)

// *rocks.Store is a trie.Backend. The check lives in an external test package
// because package rocks must not import trie.
var _ trie.Backend = (*rocks.Store)(nil)

// TestTrieOnRocks is an end-to-end smoke test: a trie persisted into a Store
// and reopened from the directory gives back its values and root.
func TestTrieOnRocks(t *testing.T) {
	dir := t.TempDir()
	open := func() *trie.DB {
		t.Helper()
		s, err := rocks.Open(dir, &rocks.Options{BlockCacheBytes: 8 << 20, WriteBufferBytes: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		db, err := trie.Open(s, &trie.Options{Workers: 1})
		if err != nil {
			s.Close()
			t.Fatal(err)
		}
		return db
	}
	key := func(i int) []byte { return []byte(fmt.Sprintf("key-%05d", i)) }
	val := func(i int) []byte { return []byte(fmt.Sprintf("value-%d", i*i)) }

	db := open()
	tx := db.Begin()
	for i := 0; i < 500; i++ {
		if err := tx.Put(key(i), val(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Persist(tx, 1); err != nil {
		t.Fatal(err)
	}
	root, err := db.StateRoot()
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = open()
	defer db.Close()
	if got, err := db.StateRoot(); err != nil || got != root {
		t.Fatalf("root after reopen = %x, %v; want %x", got, err, root)
	}
	tx = db.Begin()
	for i := 0; i < 500; i += 37 {
		got, err := tx.Get(key(i))
		if err != nil || !bytes.Equal(got, val(i)) {
			t.Fatalf("Get(%s) = %q, %v; want %q", key(i), got, err, val(i))
		}
	}
	if st := db.BackendStats(); st.PointReads+st.RangeReads == 0 {
		t.Fatalf("no backend reads after reopen: %+v", st)
	}
}
