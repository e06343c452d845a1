package main

import (
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethdb"
	gethtrie "github.com/ethereum/go-ethereum/trie"
	"github.com/hexstate/hexstate/hashkey"
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
	flush := func(force bool) error {
		if werr != nil || (!force && batch.ValueSize() < 32<<20) {
			return werr
		}
		if werr = batch.Write(); werr == nil {
			batch.Reset()
		}
		return werr
	}
	var st scaleStackTries
	st.node = func(owner common.Hash, path, blob []byte) {
		if owner == (common.Hash{}) {
			rawdb.WriteAccountTrieNode(batch, path, blob)
		} else {
			rawdb.WriteStorageTrieNode(batch, owner, path, blob)
		}
	}
	st.slot = func(owner, slot common.Hash, v []byte) error {
		if flat {
			rawdb.WriteStorageSnapshot(batch, owner, slot, v)
		}
		return flush(false)
	}
	st.account = func(owner common.Hash, sa *types.StateAccount) error {
		if flat {
			rawdb.WriteAccountSnapshot(batch, owner, types.SlimAccountRLP(*sa))
		}
		return flush(false)
	}
	root, err := st.run(idx, s)
	if err == nil {
		err = flush(true)
	}
	if err != nil {
		return common.Hash{}, err
	}
	return root, nil
}

// scaleStackTries runs go-ethereum's StackTrie over the scale state read
// from an index, in trie order: each account's storage trie, then the
// account into the account trie. node gets every hashed node (owner: the
// storage trie's account, zero for the account trie); slot and account,
// when set, every slot and account leaf (with its storage root), and an
// error they return ends the run.
type scaleStackTries struct {
	node    func(owner common.Hash, path, blob []byte)
	slot    func(owner, slot common.Hash, v []byte) error
	account func(owner common.Hash, sa *types.StateAccount) error
}

// run returns the state root.
func (t *scaleStackTries) run(idx *indexReader, s scaleShape) (common.Hash, error) {
	acc := gethtrie.NewStackTrie(func(path []byte, _ common.Hash, blob []byte) { t.node(common.Hash{}, path, blob) })
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
		sa := types.StateAccount{Nonce: nonce, Balance: &bal, Root: types.EmptyRootHash, CodeHash: code[:]}
		if slots := sortedSlots(s, i); len(slots) > 0 {
			st := gethtrie.NewStackTrie(func(path []byte, _ common.Hash, blob []byte) { t.node(owner, path, blob) })
			for k := range slots {
				v := gsSlotRLP(&slots[k].val)
				if err := st.Update(slots[k].hash[:], v); err != nil {
					return common.Hash{}, fmt.Errorf("storage trie of %v: %w", owner, err)
				}
				if t.slot != nil {
					if err := t.slot(owner, common.Hash(slots[k].hash), v); err != nil {
						return common.Hash{}, fmt.Errorf("write: %w", err)
					}
				}
			}
			sa.Root = st.Hash()
		}
		if err := acc.Update(h[:], gsAccountRLP(&sa)); err != nil {
			return common.Hash{}, fmt.Errorf("account trie: %w", err)
		}
		if t.account != nil {
			if err := t.account(owner, &sa); err != nil {
				return common.Hash{}, fmt.Errorf("write: %w", err)
			}
		}
	}
	return acc.Hash(), nil
}

// hashOf converts a go-ethereum hash.
func hashOf(h common.Hash) hashkey.Hash { return hashkey.Hash(h) }
