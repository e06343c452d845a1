package main

import (
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/ethdb"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/triedb"
	"github.com/ethereum/go-ethereum/triedb/pathdb"
	"github.com/hexstate/hexstate/hashkey"
	"github.com/holiman/uint256"
)

// gethStateRules are the fork rules the StateDB side commits under (Prague:
// empty accounts are deleted, storage is never wiped; the workload makes no
// empty accounts).
var gethStateRules = params.Rules{
	IsHomestead: true, IsEIP150: true, IsEIP155: true, IsEIP158: true, IsEIP2929: true,
	IsByzantium: true, IsConstantinople: true, IsPetersburg: true, IsIstanbul: true,
	IsBerlin: true, IsLondon: true, IsMerge: true, IsShanghai: true, IsCancun: true, IsPrague: true,
}

// gethStateScale runs the scale workload as go-ethereum runs blocks: a
// state.StateDB per block over pathdb with its flat state, so reads are served
// by the flat state (pathdb's state reader) and the tries are only walked to
// hash and commit. The build writes the flat state beside the tries and pathdb
// adopts it (triedb.AdoptSyncedState), as after a snap/2 sync. Half the cache
// budget goes to pathdb's clean trie cache, half to its clean state cache.
type gethStateScale struct {
	kv    ethdb.Database
	tdb   *triedb.Database
	sdb   state.Database
	shape scaleShape
	cache int
	root  common.Hash
	cur   *state.StateDB
}

func newGethStateScale(dir string, s scaleShape, cacheMB int) (*gethStateScale, error) {
	kv, err := openGethKV(dir, "geth-state", cacheMB)
	if err != nil {
		return nil, err
	}
	return &gethStateScale{kv: kv, shape: s, cache: cacheMB}, nil
}

func (g *gethStateScale) openTrieDB() {
	cfg := *pathdb.Defaults
	cfg.TrieCleanSize = g.cache << 19
	cfg.StateCleanSize = g.cache << 19
	cfg.SnapshotNoBuild = true // the build wrote the flat state
	cfg.NoAsyncFlush = true
	g.tdb = triedb.NewDatabase(g.kv, &triedb.Config{PathDB: &cfg})
	g.sdb = state.NewMPTDatabase(g.tdb, nil)
}

func (g *gethStateScale) Name() string { return "geth-state" }

// Build writes tries and flat state, then lets pathdb adopt them.
func (g *gethStateScale) Build(idx *indexReader) (hashkey.Hash, error) {
	root, err := gethScaleBuild(g.kv, g.shape, idx, true)
	if err != nil {
		return hashkey.Hash{}, fmt.Errorf("geth-state: build: %w", err)
	}
	g.openTrieDB()
	if err := g.tdb.AdoptSyncedState(root); err != nil {
		return hashkey.Hash{}, fmt.Errorf("geth-state: adopt flat state: %w", err)
	}
	if !g.tdb.SnapshotCompleted() {
		return hashkey.Hash{}, fmt.Errorf("geth-state: flat state not complete after adopting it")
	}
	g.root = root
	return hashOf(root), nil
}

func (g *gethStateScale) Open(block uint64, root hashkey.Hash) error {
	g.openTrieDB()
	g.root = common.Hash(root)
	if !g.tdb.SnapshotCompleted() {
		return fmt.Errorf("geth-state: flat state incomplete at block %d", block)
	}
	if _, err := g.tdb.StateReader(g.root); err != nil {
		return fmt.Errorf("geth-state: no flat state for %v at block %d: %w", root, block, err)
	}
	return nil
}

func (g *gethStateScale) Apply(b *scaleBlock) (readDigest, error) {
	var d readDigest
	st, err := state.New(g.root, g.sdb)
	if err != nil {
		return d, fmt.Errorf("state.New: %w", err)
	}
	g.cur = st
	for k := range b.accReads {
		a := common.Address(b.accReads[k].addr)
		d.account(st.GetNonce(a), st.GetBalance(a))
	}
	for k := range b.slotRead {
		op := &b.slotRead[k]
		v := st.GetState(common.Address(op.addr), common.Hash(op.key))
		d.slot(new(uint256.Int).SetBytes(v[:]))
	}
	for k := range b.accOps {
		op := &b.accOps[k]
		a := common.Address(op.addr)
		st.SetNonce(a, op.nonce, tracing.NonceChangeUnspecified)
		st.SetBalance(a, new(uint256.Int).Set(&op.balance), tracing.BalanceChangeUnspecified)
	}
	for k := range b.slotOps {
		op := &b.slotOps[k]
		st.SetState(common.Address(op.addr), common.Hash(op.key), common.Hash(op.val.Bytes32()))
	}
	if err := st.Error(); err != nil {
		return d, fmt.Errorf("statedb: %w", err)
	}
	return d, nil
}

func (g *gethStateScale) Root() (hashkey.Hash, error) {
	return hashOf(g.cur.IntermediateRoot(gethStateRules)), nil
}

// Persist commits the StateDB (a diff layer with its flat-state changes) and,
// when commit, flattens the layers to disk.
func (g *gethStateScale) Persist(block uint64, commit bool) error {
	root, err := g.cur.Commit(gethStateRules, block)
	if err != nil {
		return fmt.Errorf("statedb commit: %w", err)
	}
	g.root, g.cur = root, nil
	if commit {
		return g.tdb.Commit(root, false)
	}
	return nil
}

func (g *gethStateScale) Stats() map[string]uint64 { return nil }

func (g *gethStateScale) Close() error {
	var err error
	if g.tdb != nil {
		err = g.tdb.Close()
	}
	if e := g.kv.Close(); err == nil {
		err = e
	}
	return err
}
