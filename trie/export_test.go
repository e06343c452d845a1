package trie

import "github.com/hexstate/hexstate/hashkey"

// Generic gives the external tests the generic byte-keyed API of a frame on a
// persistent database: the public API offers it only through the in-memory
// Trie, but many store-level tests (persistence, corruption, crashes) are
// simplest over arbitrary keys.
type Generic struct{ fr *Frame }

// G returns fr's generic API.
func G(fr *Frame) Generic { return Generic{fr} }

func (g Generic) Put(key, value []byte) error          { return g.fr.putKey(key, value) }
func (g Generic) Get(key []byte) ([]byte, error)       { return g.fr.getKey(key) }
func (g Generic) Delete(key []byte) error              { return g.fr.deleteKey(key) }
func (g Generic) Hash() (hashkey.Hash, error)          { return g.fr.lockedHash() }
func (g Generic) Prove(key []byte) ([][]byte, error)   { return g.fr.prove(key) }
func (g Generic) Iterator(start []byte) *Iterator      { return g.fr.iterator(start) }
func (g Generic) BulkLoad(keys, values [][]byte) error { return g.fr.bulkLoad(keys, values) }

// HoldRead makes the caller a reader of fr, as a read in progress on another
// goroutine would, until release is called: tests use it to overlap a write
// with a read deterministically.
func HoldRead(fr *Frame) (release func()) {
	fr.use.RLock()
	return fr.use.RUnlock
}
