// Package triehook lets hexstate's own test fixtures (internal/trietest, used by
// the tests of package trie and of package rocks) reach a frame's generic
// byte-keyed API, which package trie does not export: persistence, corruption
// and crash tests are simplest over arbitrary keys. Package trie sets Generic
// when it is initialized. It is internal, so nothing outside the module can use
// it.
package triehook

import "github.com/hexstate/hexstate/hashkey"

// API is the generic byte-keyed API of one frame.
type API interface {
	Put(key, value []byte) error
	Get(key []byte) ([]byte, error)
	Delete(key []byte) error
	Hash() (hashkey.Hash, error)
	Prove(key []byte) ([][]byte, error)
	// Iterator returns a *trie.Iterator (typed any: this package cannot import trie).
	Iterator(start []byte) any
	BulkLoad(keys, values [][]byte) error
}

// Generic returns the generic API of frame, a *trie.Frame. Package trie sets it.
var Generic func(frame any) API
