package trie

import (
	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/internal/triehook"
)

// The generic byte-keyed API of a frame is not exported; the module's shared
// test fixtures (internal/trietest) reach it through internal/triehook.
func init() {
	triehook.Generic = func(fr any) triehook.API { return hookAPI{fr.(*Frame)} }
}

type hookAPI struct{ fr *Frame }

func (g hookAPI) Put(key, value []byte) error          { return g.fr.putKey(key, value) }
func (g hookAPI) Get(key []byte) ([]byte, error)       { return g.fr.getKey(key) }
func (g hookAPI) Delete(key []byte) error              { return g.fr.deleteKey(key) }
func (g hookAPI) Hash() (hashkey.Hash, error)          { return g.fr.lockedHash() }
func (g hookAPI) Prove(key []byte) ([][]byte, error)   { return g.fr.prove(key) }
func (g hookAPI) Iterator(start []byte) any            { return g.fr.iterator(start) }
func (g hookAPI) BulkLoad(keys, values [][]byte) error { return g.fr.bulkLoad(keys, values) }
