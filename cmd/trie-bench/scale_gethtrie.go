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
	"github.com/ethereum/go-ethereum/triedb"
	"github.com/ethereum/go-ethereum/triedb/pathdb"
	"github.com/hexstate/hexstate/hashkey"
	"github.com/holiman/uint256"
)

// gethTrieScale runs the scale workload on go-ethereum's tries alone (no flat
// state), over pathdb on Pebble, as gethSide does for the in-memory workload:
// reads and writes go through the account trie and the storage tries.
type gethTrieScale struct {
	kv    ethdb.Database
	tdb   *triedb.Database
	shape scaleShape
	cache int // MiB: the clean trie cache
	root  common.Hash

	acc   *gethtrie.Trie
	objs  map[int32]*gtObject
	order []int32
}

// gtObject is an account loaded in the block in progress.
type gtObject struct {
	hash    hashkey.Hash
	data    types.StateAccount
	storage *gethtrie.Trie // opened on first storage access
	dirty   bool           // the account was written
	written bool           // a slot was written
}

// openGethKV opens (or creates) the Pebble store of a go-ethereum side.
func openGethKV(dir, name string, cacheMB int) (ethdb.Database, error) {
	kvs, err := pebble.New(filepath.Join(dir, name), cacheMB, 1024, "", false)
	if err != nil {
		return nil, fmt.Errorf("%s: pebble: %w", name, err)
	}
	return rawdb.NewDatabase(kvs), nil
}

func newGethTrieScale(dir string, s scaleShape, cacheMB int) (*gethTrieScale, error) {
	kv, err := openGethKV(dir, "geth", cacheMB)
	if err != nil {
		return nil, err
	}
	return &gethTrieScale{kv: kv, shape: s, cache: cacheMB}, nil
}

// openTrieDB opens pathdb on the store (after the build, or on a built store).
func (g *gethTrieScale) openTrieDB() {
	cfg := *pathdb.Defaults
	cfg.TrieCleanSize = g.cache << 20
	cfg.SnapshotNoBuild = true
	cfg.NoAsyncFlush = true
	g.tdb = triedb.NewDatabase(g.kv, &triedb.Config{PathDB: &cfg})
}

func (g *gethTrieScale) Name() string { return "geth" }

// Build writes the tries (no flat state) and reopens pathdb on them.
func (g *gethTrieScale) Build(idx *indexReader) (hashkey.Hash, error) {
	root, err := gethScaleBuild(g.kv, g.shape, idx, false)
	if err != nil {
		return hashkey.Hash{}, fmt.Errorf("geth: build: %w", err)
	}
	g.openTrieDB()
	g.root = root
	return hashOf(root), nil
}

func (g *gethTrieScale) Open(block uint64, root hashkey.Hash) error {
	g.openTrieDB()
	g.root = common.Hash(root)
	if _, err := g.tdb.NodeReader(g.root); err != nil {
		return fmt.Errorf("geth: no state %v at block %d: %w", root, block, err)
	}
	return nil
}

// object loads account idx into the block in progress.
func (g *gethTrieScale) object(idx int32, h hashkey.Hash) (*gtObject, error) {
	if o := g.objs[idx]; o != nil {
		return o, nil
	}
	enc, err := g.acc.Get(h[:])
	if err != nil {
		return nil, err
	}
	o := &gtObject{hash: h}
	if enc == nil {
		return nil, fmt.Errorf("geth: account %v missing", h)
	}
	if err := rlp.DecodeBytes(enc, &o.data); err != nil {
		return nil, err
	}
	g.objs[idx] = o
	g.order = append(g.order, idx)
	return o, nil
}

func (g *gethTrieScale) storage(o *gtObject) (*gethtrie.Trie, error) {
	if o.storage == nil {
		st, err := gethtrie.New(gethtrie.StorageTrieID(g.root, common.Hash(o.hash), o.data.Root), g.tdb)
		if err != nil {
			return nil, err
		}
		o.storage = st
	}
	return o.storage, nil
}

func (g *gethTrieScale) Apply(b *scaleBlock) (readDigest, error) {
	var d readDigest
	acc, err := gethtrie.New(gethtrie.TrieID(g.root), g.tdb)
	if err != nil {
		return d, err
	}
	g.acc, g.objs, g.order = acc, map[int32]*gtObject{}, g.order[:0]
	for k := range b.accReads {
		op := &b.accReads[k]
		o, err := g.object(op.idx, op.hash)
		if err != nil {
			return d, err
		}
		d.account(o.data.Nonce, o.data.Balance)
	}
	for k := range b.slotRead {
		op := &b.slotRead[k]
		o, err := g.object(op.idx, op.hash)
		if err != nil {
			return d, err
		}
		st, err := g.storage(o)
		if err != nil {
			return d, err
		}
		enc, err := st.Get(op.slot[:])
		if err != nil {
			return d, err
		}
		var v uint256.Int
		if len(enc) > 0 {
			_, content, _, err := rlp.Split(enc)
			if err != nil {
				return d, err
			}
			v.SetBytes(content)
		}
		d.slot(&v)
	}
	for k := range b.accOps {
		op := &b.accOps[k]
		o, err := g.object(op.idx, op.hash)
		if err != nil {
			return d, err
		}
		o.data.Nonce, o.data.Balance, o.dirty = op.nonce, new(uint256.Int).Set(&op.balance), true
	}
	for k := range b.slotOps {
		op := &b.slotOps[k]
		o, err := g.object(op.idx, op.hash)
		if err != nil {
			return d, err
		}
		st, err := g.storage(o)
		if err != nil {
			return d, err
		}
		if op.val.IsZero() {
			err = st.Delete(op.slot[:])
		} else {
			err = st.Update(op.slot[:], gsSlotRLP(&op.val))
		}
		if err != nil {
			return d, err
		}
		o.written, o.dirty = true, true
	}
	return d, nil
}

// Root hashes the written storage tries in parallel, updates the written
// accounts and hashes the account trie.
func (g *gethTrieScale) Root() (hashkey.Hash, error) {
	var wg sync.WaitGroup
	work := make(chan *gtObject, 64)
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
		if o := g.objs[idx]; o.written {
			work <- o
		}
	}
	close(work)
	wg.Wait()
	for _, idx := range g.order {
		if o := g.objs[idx]; o.dirty {
			if err := g.acc.Update(o.hash[:], gsAccountRLP(&o.data)); err != nil {
				return hashkey.Hash{}, err
			}
		}
	}
	return hashkey.Hash(g.acc.Hash()), nil
}

// Persist commits the tries into a diff layer and, when commit, flattens the
// layers to disk.
func (g *gethTrieScale) Persist(block uint64, commit bool) error {
	var storages []*gethtrie.Trie
	for _, idx := range g.order {
		if o := g.objs[idx]; o.written {
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

func (g *gethTrieScale) Stats() map[string]uint64 { return nil }

func (g *gethTrieScale) Close() error {
	var err error
	if g.tdb != nil {
		err = g.tdb.Close()
	}
	if e := g.kv.Close(); err == nil {
		err = e
	}
	return err
}
