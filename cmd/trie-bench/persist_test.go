package main

import (
	"errors"
	"testing"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie"
)

// TestPersistTwice: persisting a frame that is already the persisted base
// (nothing new to write) must not panic; it should be a no-op or an error.
func TestPersistTwice(t *testing.T) {
	db, err := trie.Open(trie.NewMemoryBackend(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx := db.Begin()
	if err := tx.UpdateAccount(hashkey.Keccak256([]byte("a")), trie.Account{Nonce: 1}); err != nil {
		t.Fatal(err)
	}
	if err := db.Persist(tx, 1); err != nil {
		t.Fatal(err)
	}
	want, _ := db.StateRoot()
	err = safely(func() error { return db.Persist(tx, 1) })
	t.Logf("second Persist of the same frame: %v", err)
	if errors.Is(err, errPanic) {
		t.Fatalf("second Persist of the same frame panicked: %v", err)
	}
	if got, err := db.StateRoot(); err != nil || got != want {
		t.Fatalf("StateRoot after second Persist = %v, %v; want %v", got, err, want)
	}
}
