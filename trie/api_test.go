package trie_test

import (
	"reflect"
	"testing"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie"
	"github.com/holiman/uint256"
)

// The public API that client code and external tooling rely on, pinned
// signature by signature: a change to any of these fails to compile here
// before it breaks a user.
var (
	_ func(trie.Backend, *trie.Options) (*trie.DB, error) = trie.Open
	_ func() trie.Backend                                 = trie.NewMemoryBackend

	_ func(*trie.DB) *trie.Frame                                         = (*trie.DB).Begin
	_ func(*trie.DB, *trie.Frame, uint64) error                          = (*trie.DB).Persist
	_ func(*trie.DB) (hashkey.Hash, error)                               = (*trie.DB).StateRoot
	_ func(*trie.DB) uint64                                              = (*trie.DB).Block
	_ func(*trie.DB) error                                               = (*trie.DB).Close
	_ func(*trie.DB) (*trie.StateLoader, error)                          = (*trie.DB).NewStateLoader
	_ func(*trie.Frame) *trie.Frame                                      = (*trie.Frame).Begin
	_ func(*trie.Frame)                                                  = (*trie.Frame).Rollback
	_ func(*trie.Frame, hashkey.Hash, trie.Account) error                = (*trie.Frame).UpdateAccount
	_ func(*trie.Frame, hashkey.Hash) (trie.Account, bool, error)        = (*trie.Frame).Account
	_ func(*trie.Frame, hashkey.Hash) error                              = (*trie.Frame).DeleteAccount
	_ func(*trie.Frame, hashkey.Hash, hashkey.Hash, *uint256.Int) error  = (*trie.Frame).UpdateStorage
	_ func(*trie.Frame, hashkey.Hash, hashkey.Hash) (uint256.Int, error) = (*trie.Frame).Storage
	_ func(*trie.Frame) (hashkey.Hash, error)                            = (*trie.Frame).StateRoot
	_ func(*trie.Frame, hashkey.Hash) (hashkey.Hash, error)              = (*trie.Frame).StorageRoot
	_ func(*trie.Frame, hashkey.Hash) ([][]byte, error)                  = (*trie.Frame).AccountProof
	_ func(*trie.Frame, hashkey.Hash, hashkey.Hash) ([][]byte, error)    = (*trie.Frame).StorageProof

	_ func() *trie.Trie                          = trie.NewTrie
	_ func(*trie.Trie, []byte, []byte) error     = (*trie.Trie).Put
	_ func(*trie.Trie, []byte) ([]byte, error)   = (*trie.Trie).Get
	_ func(*trie.Trie, []byte) error             = (*trie.Trie).Delete
	_ func(*trie.Trie) hashkey.Hash              = (*trie.Trie).Hash
	_ func(*trie.Trie, []byte) ([][]byte, error) = (*trie.Trie).Prove
)

// TestFrameHasNoGenericAPI: a state frame has no generic byte-keyed API —
// raw values written into the state trie would orphan storage tries and read
// back as corruption — and no method of the old transaction-named type.
func TestFrameHasNoGenericAPI(t *testing.T) {
	ft := reflect.TypeOf((*trie.Frame)(nil))
	for _, name := range []string{"Put", "Get", "Delete", "Hash", "Prove", "Iterator", "BulkLoad"} {
		if _, ok := ft.MethodByName(name); ok {
			t.Errorf("*trie.Frame has a %s method: the generic API belongs to trie.Trie only", name)
		}
	}
}
