package rocks_test

import (
	"fmt"
	"testing"

	"github.com/hexstate/hexstate/hashkey"
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
	key := func(i int) hashkey.Hash { return hashkey.Keccak256([]byte(fmt.Sprintf("key-%05d", i))) }
	val := func(i int) trie.Account { return trie.Account{Nonce: uint64(i*i + 1)} }

	db := open()
	fr := db.Begin()
	for i := 0; i < 500; i++ {
		if err := fr.UpdateAccount(key(i), val(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Persist(fr, 1); err != nil {
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
	fr = db.Begin()
	for i := 0; i < 500; i += 37 {
		got, ok, err := fr.Account(key(i))
		if err != nil || !ok || got.Nonce != val(i).Nonce {
			t.Fatalf("Account(%v) = %+v, %v, %v; want %+v", key(i), got, ok, err, val(i))
		}
	}
	if st := db.BackendStats(); st.Reads() == 0 {
		t.Fatalf("no backend reads after reopen: %+v", st)
	}
}
