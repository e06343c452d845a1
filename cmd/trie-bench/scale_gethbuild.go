package main

import (
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethdb"
	gethtrie "github.com/ethereum/go-ethereum/trie"
	"github.com/hexstate/hexstate/hashkey"
	"github.com/holiman/uint256"
)

// gethScaleBuild writes a state into an empty Pebble store the way snap sync
// does: StackTries over the sorted leaves emit every hashed node, written at
// its path (rawdb.WriteAccountTrieNode / WriteStorageTrieNode, pathdb's
// layout), and, when flat, the flat state (rawdb.WriteAccountSnapshot /
// WriteStorageSnapshot). The caller then opens pathdb on the store (and, for
// the flat state, adopts it with triedb.AdoptSyncedState). go-ethereum has no
// bulk-build API for pathdb other than this sync path; StackTrie is what it
// uses there.
func gethScaleBuild(kv ethdb.Database, s scaleShape, idx *indexReader, flat bool) (common.Hash, error) {
	batch := kv.NewBatch()
	var werr error
	flush := func(force bool) {
		if werr != nil || (!force && batch.ValueSize() < 32<<20) {
			return
		}
		if werr = batch.Write(); werr == nil {
			batch.Reset()
		}
	}
	acc := gethtrie.NewStackTrie(func(path []byte, _ common.Hash, blob []byte) {
		rawdb.WriteAccountTrieNode(batch, path, blob)
	})
	for {
		h, i, ok, err := idx.Next()
		if err != nil {
			return common.Hash{}, err
		}
		if !ok {
			break
		}
		owner := common.Hash(h)
		nonce, bal, code := s.account(i)
		sa := types.StateAccount{Nonce: nonce, Balance: new(uint256.Int).Set(&bal), Root: types.EmptyRootHash, CodeHash: code[:]}
		if slots := sortedSlots(s, i); len(slots) > 0 {
			st := gethtrie.NewStackTrie(func(path []byte, _ common.Hash, blob []byte) {
				rawdb.WriteStorageTrieNode(batch, owner, path, blob)
			})
			for k := range slots {
				v := gsSlotRLP(&slots[k].val)
				if err := st.Update(slots[k].hash[:], v); err != nil {
					return common.Hash{}, fmt.Errorf("storage trie of %v: %w", owner, err)
				}
				if flat {
					rawdb.WriteStorageSnapshot(batch, owner, common.Hash(slots[k].hash), v)
				}
				flush(false)
			}
			sa.Root = st.Hash()
		}
		if err := acc.Update(h[:], gsAccountRLP(&sa)); err != nil {
			return common.Hash{}, fmt.Errorf("account trie: %w", err)
		}
		if flat {
			rawdb.WriteAccountSnapshot(batch, owner, types.SlimAccountRLP(sa))
		}
		flush(false)
		if werr != nil {
			return common.Hash{}, fmt.Errorf("write: %w", werr)
		}
	}
	root := acc.Hash()
	flush(true)
	if werr != nil {
		return common.Hash{}, fmt.Errorf("write: %w", werr)
	}
	return root, nil
}

// hashOf converts a go-ethereum hash.
func hashOf(h common.Hash) hashkey.Hash { return hashkey.Hash(h) }
