package main

import (
	"errors"

	"github.com/hexstate/hexstate/rocks"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// openReadOnly opens the store in dir read-only and the trie database in it,
// in whatever format it was written. On failure nothing stays open.
func openReadOnly(dir string) (*trie.DB, error) {
	db, err := openFormat(dir, vertex.Latest)
	var fe *trie.FormatError
	if errors.As(err, &fe) && fe.Found.Valid() {
		db, err = openFormat(dir, fe.Found)
	}
	return db, err
}

func openFormat(dir string, f vertex.Format) (*trie.DB, error) {
	store, err := rocks.Open(dir, &rocks.Options{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	// The check reads past the record cache: keep it small.
	db, err := trie.Open(store, &trie.Options{Format: f, CacheBytes: 1 << 20})
	if err != nil {
		store.Close()
		return nil, err
	}
	return db, nil
}

// damaged reports whether err, from openReadOnly, says the store is a
// database whose state is damaged (its admin record, or the root vertex that
// Open compares with it) rather than one that could not be opened at all.
func damaged(err error) bool {
	return errors.Is(err, trie.ErrCorruptAdmin) || errors.Is(err, vertex.ErrCorrupt) || errors.Is(err, trie.ErrMissingVertex)
}
