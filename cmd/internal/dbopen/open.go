package dbopen

import (
	"github.com/hexstate/hexstate/rocks"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// Open opens (or creates) the RocksDB store in dir with default options and the
// trie database of format f in it. On failure nothing stays open.
func Open(dir string, f vertex.Format) (*trie.DB, error) {
	store, err := rocks.Open(dir, nil)
	if err != nil {
		return nil, err
	}
	db, err := trie.Open(store, &trie.Options{Format: f})
	if err != nil {
		store.Close()
		return nil, err
	}
	return db, nil
}
