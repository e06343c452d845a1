package trie

import (
	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/vertex"
)

// Trie is a standalone in-memory generic Merkle-Patricia trie over byte keys and
// non-empty byte values (receipts, transactions): a database on a memory backend
// with one frame. It hashes and proves exactly as the state trie does. It is not
// safe for concurrent use.
type Trie struct {
	fr *Frame
}

// NewTrie returns an empty in-memory trie in the default layout (format v2).
func NewTrie() *Trie { return NewTrieFormat(vertex.Latest) }

// NewTrieFormat returns an empty in-memory trie in layout f (FormatV1 or FormatV2;
// anything else means the latest). Both layouts give identical hashes and proofs.
func NewTrieFormat(f vertex.Format) *Trie {
	if !f.Valid() {
		f = vertex.Latest
	}
	db, err := Open(NewMemoryBackend(), &Options{Format: f})
	if err != nil {
		panic("trie: opening an empty memory backend cannot fail: " + err.Error())
	}
	return &Trie{fr: db.Begin()}
}

// Put stores value under key; an empty value deletes key.
func (t *Trie) Put(key, value []byte) error { return t.fr.putKey(key, value) }

// Get returns the value under key, or nil, nil when there is none.
func (t *Trie) Get(key []byte) ([]byte, error) { return t.fr.getKey(key) }

// Delete removes key; an absent key is not an error.
func (t *Trie) Delete(key []byte) error { return t.fr.deleteKey(key) }

// Hash returns the root hash (hashkey.EmptyRoot for an empty trie).
func (t *Trie) Hash() hashkey.Hash {
	h, err := t.fr.lockedHash()
	if err != nil {
		panic("trie: hashing an in-memory trie cannot fail: " + err.Error())
	}
	return h
}

// Prove returns the proof of key (present or absent): the RLP of the nodes on its
// path from the root, as go-ethereum's Prove emits them.
func (t *Trie) Prove(key []byte) ([][]byte, error) { return t.fr.prove(key) }

// Iterator returns an iterator over the keys >= start, in key order.
func (t *Trie) Iterator(start []byte) *Iterator { return t.fr.iterator(start) }
