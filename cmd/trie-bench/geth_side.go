package main

import (
	"fmt"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethdb"
	"github.com/ethereum/go-ethereum/ethdb/pebble"
	"github.com/ethereum/go-ethereum/rlp"
	gethtrie "github.com/ethereum/go-ethereum/trie"
	"github.com/ethereum/go-ethereum/trie/trienode"
	"github.com/ethereum/go-ethereum/triedb"
	"github.com/ethereum/go-ethereum/triedb/pathdb"
	"github.com/hexstate/hexstate/hashkey"
	"github.com/holiman/uint256"
)

// gethSide runs the workload on go-ethereum's Merkle-Patricia trie over the
// path-based trie database (pathdb) on Pebble, the way core/state does it:
// per block, the account trie and the touched storage tries are opened at the
// parent root, updated, hashed (storage tries in parallel), committed into a
// merged node set and handed to triedb.Update as a new diff layer; every
// persistEvery blocks triedb.Commit flattens the layers onto disk.
//
// No flat state (snapshot) is maintained: triedb.Update gets an empty state
// set, so geth does the trie work only, like hexstate.
type gethSide struct {
	kv   ethdb.Database
	tdb  *triedb.Database
	w    *workload
	root common.Hash // the last block's root

	acc   *gethtrie.Trie
	objs  map[int32]*gsObject // accounts touched by the block in progress
	order []int32             // objs in first-touch order
	build struct {
		merged *trienode.MergedNodeSet
	}
}

// gsObject is an account loaded for the block in progress (cf. state.stateObject).
type gsObject struct {
	data    types.StateAccount
	storage *gethtrie.Trie // opened on the first slot write
}

func newGethSide(dir string, cacheMB int, w *workload) (*gethSide, error) {
	kvs, err := pebble.New(filepath.Join(dir, "geth"), cacheMB, 1024, "", false)
	if err != nil {
		return nil, err
	}
	kv := rawdb.NewDatabase(kvs)
	cfg := *pathdb.Defaults
	cfg.TrieCleanSize = cacheMB << 20
	cfg.SnapshotNoBuild = true // no flat-state generation in the background
	cfg.NoAsyncFlush = true    // Commit returns once the nodes are on disk, like Persist
	tdb := triedb.NewDatabase(kv, &triedb.Config{PathDB: &cfg})
	return &gethSide{kv: kv, tdb: tdb, w: w, root: types.EmptyRootHash}, nil
}

func (g *gethSide) Name() string { return "geth" }

func gsAccountRLP(a *types.StateAccount) []byte {
	enc, err := rlp.EncodeToBytes(a)
	if err != nil {
		panic(err)
	}
	return enc
}

func gsSlotRLP(v *uint256.Int) []byte {
	enc, err := rlp.EncodeToBytes(v.Bytes())
	if err != nil {
		panic(err)
	}
	return enc
}

// BuildLoad inserts the initial state: every storage trie, committed into the
// merged node set, then every account (sorted) into the account trie.
func (g *gethSide) BuildLoad() error {
	g.build.merged = trienode.NewMergedNodeSet()
	acc, err := gethtrie.New(gethtrie.TrieID(types.EmptyRootHash), g.tdb)
	if err != nil {
		return err
	}
	g.acc = acc
	for i := range g.w.accounts {
		a := &g.w.accounts[i]
		sa := types.StateAccount{Nonce: a.nonce, Balance: new(uint256.Int).Set(&a.balance), Root: types.EmptyRootHash, CodeHash: a.code[:]}
		if slots := g.w.storage[int32(i)]; len(slots) > 0 {
			st, err := gethtrie.New(gethtrie.StorageTrieID(types.EmptyRootHash, common.Hash(a.hash), types.EmptyRootHash), g.tdb)
			if err != nil {
				return err
			}
			for j := range slots {
				if err := st.Update(slots[j].Hash[:], gsSlotRLP(&slots[j].Value)); err != nil {
					return err
				}
			}
			root, set := st.Commit(false)
			if set != nil {
				if err := g.build.merged.Merge(set); err != nil {
					return err
				}
			}
			sa.Root = root
		}
		if err := acc.Update(a.hash[:], gsAccountRLP(&sa)); err != nil {
			return err
		}
	}
	return nil
}

func (g *gethSide) BuildRoot() (hashkey.Hash, error) { return hashkey.Hash(g.acc.Hash()), nil }

func (g *gethSide) BuildPersist() error {
	root, set := g.acc.Commit(false)
	if set != nil {
		if err := g.build.merged.Merge(set); err != nil {
			return err
		}
	}
	if err := g.tdb.Update(root, types.EmptyRootHash, 0, g.build.merged, triedb.NewStateSet()); err != nil {
		return err
	}
	g.build.merged = nil
	if err := g.tdb.Commit(root, false); err != nil {
		return err
	}
	g.root = root
	return nil
}

// object loads account idx for the block in progress.
func (g *gethSide) object(idx int32) (*gsObject, error) {
	if o := g.objs[idx]; o != nil {
		return o, nil
	}
	h := g.w.accounts[idx].hash
	enc, err := g.acc.Get(h[:])
	if err != nil {
		return nil, err
	}
	if enc == nil {
		return nil, fmt.Errorf("geth: account %v missing", h)
	}
	o := &gsObject{}
	if err := rlp.DecodeBytes(enc, &o.data); err != nil {
		return nil, err
	}
	g.objs[idx] = o
	g.order = append(g.order, idx)
	return o, nil
}

func (g *gethSide) Apply(b *wlBlock) error {
	acc, err := gethtrie.New(gethtrie.TrieID(g.root), g.tdb)
	if err != nil {
		return err
	}
	g.acc, g.objs, g.order = acc, make(map[int32]*gsObject, len(b.accOps)+len(b.slotOps)), g.order[:0]
	for i := range b.accOps {
		op := &b.accOps[i]
		o, err := g.object(op.idx)
		if err != nil {
			return err
		}
		o.data.Nonce = op.nonce
		o.data.Balance = new(uint256.Int).Set(&op.balance)
	}
	for i := range b.slotOps {
		op := &b.slotOps[i]
		o, err := g.object(op.idx)
		if err != nil {
			return err
		}
		if o.storage == nil {
			h := g.w.accounts[op.idx].hash
			if o.storage, err = gethtrie.New(gethtrie.StorageTrieID(g.root, common.Hash(h), o.data.Root), g.tdb); err != nil {
				return err
			}
		}
		if op.val.IsZero() {
			err = o.storage.Delete(op.slot[:])
		} else {
			err = o.storage.Update(op.slot[:], gsSlotRLP(&op.val))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Root hashes the touched storage tries in parallel (as StateDB.IntermediateRoot
// does), writes the touched accounts into the account trie and hashes it.
func (g *gethSide) Root() (hashkey.Hash, error) {
	var (
		wg   sync.WaitGroup
		work = make(chan *gsObject, 64)
	)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for o := range work {
				o.data.Root = o.storage.Hash()
			}
		}()
	}
	for _, idx := range g.order {
		if o := g.objs[idx]; o.storage != nil {
			work <- o
		}
	}
	close(work)
	wg.Wait()
	for _, idx := range g.order {
		h := g.w.accounts[idx].hash
		if err := g.acc.Update(h[:], gsAccountRLP(&g.objs[idx].data)); err != nil {
			return hashkey.Hash{}, err
		}
	}
	return hashkey.Hash(g.acc.Hash()), nil
}

// Persist commits the tries into a merged node set, adds it as a diff layer
// (triedb.Update) and, when commit, flattens the layers to disk (triedb.Commit).
func (g *gethSide) Persist(block uint64, commit bool) error {
	var storages []*gethtrie.Trie
	for _, idx := range g.order {
		if o := g.objs[idx]; o.storage != nil {
			storages = append(storages, o.storage)
		}
	}
	root, err := commitLayer(g.tdb, g.root, block, g.acc, storages, commit)
	if err != nil {
		return err
	}
	g.root, g.acc, g.objs = root, nil, nil
	return nil
}

// commitLayer commits the storage tries and then the account trie acc into
// one pathdb diff layer on parent for block (triedb.Update) and, when flatten,
// writes the layers to disk (triedb.Commit). It returns the new root.
func commitLayer(tdb *triedb.Database, parent common.Hash, block uint64, acc *gethtrie.Trie, storages []*gethtrie.Trie, flatten bool) (common.Hash, error) {
	merged := trienode.NewMergedNodeSet()
	for _, st := range storages {
		if _, set := st.Commit(false); set != nil {
			if err := merged.Merge(set); err != nil {
				return common.Hash{}, err
			}
		}
	}
	root, set := acc.Commit(false)
	if set != nil {
		if err := merged.Merge(set); err != nil {
			return common.Hash{}, err
		}
	}
	if err := tdb.Update(root, parent, block, merged, triedb.NewStateSet()); err != nil {
		return common.Hash{}, err
	}
	if flatten {
		return root, tdb.Commit(root, false)
	}
	return root, nil
}

func (g *gethSide) StatsStart() {}

func (g *gethSide) StatsLine() string {
	diffs, nodes, _ := g.tdb.Size()
	return fmt.Sprintf("pathdb: diff layers %v, dirty buffer %v", diffs, nodes)
}

func (g *gethSide) Close() error {
	err := g.tdb.Close()
	if e := g.kv.Close(); err == nil {
		err = e
	}
	return err
}
