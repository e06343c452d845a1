package gethstate_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/consensus"
	"github.com/ethereum/go-ethereum/consensus/beacon"
	"github.com/ethereum/go-ethereum/consensus/ethash"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/ethdb"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/triedb"
	"github.com/holiman/uint256"

	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/trie/gethstate"
)

// TestBlockchainEVM executes the BlockchainTests fixtures' blocks with hexstate
// as the EVM's read source. go-ethereum's runner is run first only to learn the
// chain config, the genesis and which blocks it committed, in which order; each
// of those blocks is then executed again here: state.NewWithReader on a
// gethstate.Reader of the parent's hexstate frame, core.NewStateProcessor's
// Process, StateDB.CommitWithUpdate, and Chain.ApplyUpdate with the hashed
// update (origins verified, root compared with the header, finality depth 2).
//
// Every account, storage and code read goes through the Reader: a checking
// wrapper counts them and compares each answer with go-ethereum's own reader of
// the same root, and the state.Database handed to the StateDB fails the test if
// its Reader is asked for anything before the commit. (The StateDB still
// computes the post-state root in go-ethereum tries, so a go-ethereum state is
// kept alongside: that is what the Database is for.)
func TestBlockchainEVM(t *testing.T) {
	fixtures := loadFixtures(t, nil)
	start := time.Now()
	var total evmStats
	failed := 0
	for _, f := range fixtures {
		st, err := runEVM(f)
		if err != nil {
			failed++
			if failed <= 20 {
				t.Errorf("%s %s: %v", f.file, f.name, err)
			}
		}
		total.add(st)
	}
	if total.reads.accounts == 0 || total.reads.slots == 0 || total.reads.codes == 0 {
		t.Errorf("the reader served %+v: some kind of read never reached it", total.reads)
	}
	t.Logf("%d fixtures (%d failed), %d blocks executed on hexstate, %d roots compared; reader served %d account, %d slot, %d code reads, all equal to go-ethereum's; %d persists; %v",
		len(fixtures), failed, total.blocks, total.chain.Blocks, total.reads.accounts, total.reads.slots, total.reads.codes, total.chain.Persisted, time.Since(start).Round(time.Millisecond))
}

type evmStats struct {
	blocks int
	reads  readCounts
	chain  gethstate.ChainStats
}

func (s *evmStats) add(o evmStats) {
	s.blocks += o.blocks
	s.reads.accounts += o.reads.accounts
	s.reads.slots += o.reads.slots
	s.reads.codes += o.reads.codes
	s.chain.Blocks += o.chain.Blocks
	s.chain.Persisted += o.chain.Persisted
}

// runEVM replays one fixture's committed blocks on hexstate.
func runEVM(f *fixture) (evmStats, error) {
	var st evmStats
	// Learn the chain from go-ethereum's runner.
	var (
		config    *params.ChainConfig
		genesis   *types.Block
		alloc     types.GenesisAlloc
		cur       *types.Block
		committed []*types.Block
	)
	hooks := &tracing.Hooks{
		OnBlockchainInit: func(c *params.ChainConfig) { config = c },
		OnGenesisBlock:   func(g *types.Block, a types.GenesisAlloc) { genesis, alloc = g, a },
		OnBlockStart:     func(ev tracing.BlockEvent) { cur = ev.Block },
		OnBlockEnd:       func(error) { cur = nil },
		OnStateUpdate: func(u *tracing.StateUpdate) {
			if cur != nil {
				committed = append(committed, cur)
			}
		},
	}
	if err := f.test.Run(false, rawdb.HashScheme, false, hooks, nil); err != nil {
		return st, fmt.Errorf("go-ethereum's runner: %w", err)
	}
	if config == nil || genesis == nil {
		return st, errors.New("the runner gave no chain config or genesis")
	}

	// go-ethereum's state alongside (for the StateDB's root computation), and
	// its key-value store as the code store.
	kv := rawdb.NewMemoryDatabase()
	sdb := state.NewDatabase(triedb.NewDatabase(kv, triedb.HashDefaults), state.NewCodeDB(kv))
	groot, err := gethGenesis(sdb, alloc)
	if err != nil {
		return st, err
	}
	if groot != genesis.Root() {
		return st, fmt.Errorf("go-ethereum genesis root %x, header %x", groot, genesis.Root())
	}

	db, err := trie.Open(trie.NewMemoryBackend(), nil)
	if err != nil {
		return st, err
	}
	defer db.Close()
	oracle := &finalityOracle{f: f}
	chain, err := gethstate.NewChain(db, gethstate.ChainOptions{FinalityDepth: 2, MayFinalize: oracle.mayFinalize, VerifyOrigins: true})
	if err != nil {
		return st, err
	}
	if err := chain.Genesis(genesis, alloc, nil); err != nil {
		return st, err
	}
	cc := &chainContext{config: config, engine: beacon.New(ethash.NewFaker()), headers: map[common.Hash]*types.Header{genesis.Hash(): genesis.Header()}}
	for _, blk := range committed {
		oracle.at(blk.Hash())
		if err := executeBlock(chain, sdb, kv, cc, blk, &st.reads); err != nil {
			return st, fmt.Errorf("block %d %x: %w", blk.NumberU64(), blk.Hash(), err)
		}
		st.blocks++
	}
	st.chain = chain.Stats()
	return st, nil
}

// executeBlock executes blk on the hexstate state of its parent.
func executeBlock(chain *gethstate.Chain, sdb state.Database, kv ethdb.KeyValueReader, cc *chainContext, blk *types.Block, reads *readCounts) error {
	parent := cc.headers[blk.ParentHash()]
	if parent == nil {
		return fmt.Errorf("unknown parent %x", blk.ParentHash())
	}
	r, err := chain.Reader(blk.ParentHash(), parent.Root, kv)
	if err != nil {
		return err
	}
	ref, err := sdb.Reader(parent.Root)
	if err != nil {
		return fmt.Errorf("go-ethereum reader: %w", err)
	}
	cr := &checkedReader{hex: r, ref: ref}
	guard := &guardDB{Database: sdb}
	statedb, err := state.NewWithReader(parent.Root, guard, cr)
	if err != nil {
		return err
	}
	cc.current = parent
	if _, err := core.NewStateProcessor(cc).Process(context.Background(), blk, statedb, nil, nil, vm.Config{}, nil); err != nil {
		return fmt.Errorf("process: %w", err)
	}
	if n := guard.readers.Load(); n != 0 {
		return fmt.Errorf("the StateDB asked go-ethereum's database for %d readers during execution", n)
	}
	rules := cc.config.Rules(blk.Number(), blk.Difficulty().Sign() == 0, blk.Time())
	root, update, err := statedb.CommitWithUpdate(rules, blk.NumberU64())
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	if err := cr.err(); err != nil {
		return err
	}
	if root != blk.Root() {
		return fmt.Errorf("go-ethereum root %x, header %x", root, blk.Root())
	}
	if err := chain.ApplyUpdate(blk.Header(), update); err != nil {
		return err
	}
	cc.headers[blk.Hash()] = blk.Header()
	reads.accounts += int(cr.n.accounts.Load())
	reads.slots += int(cr.n.slots.Load())
	reads.codes += int(cr.n.codes.Load())
	return nil
}

// gethGenesis writes alloc to go-ethereum's state as core.Genesis does.
func gethGenesis(sdb state.Database, alloc types.GenesisAlloc) (common.Hash, error) {
	s, err := state.New(types.EmptyRootHash, sdb)
	if err != nil {
		return common.Hash{}, err
	}
	for addr, a := range alloc {
		if a.Balance != nil {
			s.AddBalance(addr, uint256.MustFromBig(a.Balance), tracing.BalanceIncreaseGenesisBalance)
		}
		s.SetCode(addr, a.Code, tracing.CodeChangeGenesis)
		s.SetNonce(addr, a.Nonce, tracing.NonceChangeGenesis)
		for k, v := range a.Storage {
			s.SetState(addr, k, v)
		}
	}
	return s.Commit(params.Rules{}, 0)
}

// readCounts counts the reads a checkedReader served.
type readCounts struct{ accounts, slots, codes int }

// checkedReader passes every read to the hexstate Reader, counts it and
// compares the answer with go-ethereum's reader of the same root.
type checkedReader struct {
	hex *gethstate.Reader
	ref state.Reader
	n   struct{ accounts, slots, codes atomic.Int64 }

	mu   atomic.Pointer[error] // the first mismatch
	errs atomic.Int64
}

func (c *checkedReader) fail(err error) {
	c.errs.Add(1)
	c.mu.CompareAndSwap(nil, &err)
}

func (c *checkedReader) err() error {
	if p := c.mu.Load(); p != nil {
		return fmt.Errorf("%d reads differ from go-ethereum's, first: %w", c.errs.Load(), *p)
	}
	return nil
}

func (c *checkedReader) Account(addr common.Address) (*types.StateAccount, error) {
	c.n.accounts.Add(1)
	got, err := c.hex.Account(addr)
	if err != nil {
		return nil, err
	}
	want, err := c.ref.Account(addr)
	if err != nil {
		return nil, err
	}
	if (got == nil) != (want == nil) || got != nil && (got.Nonce != want.Nonce || !got.Balance.Eq(want.Balance) || got.Root != want.Root || common.BytesToHash(got.CodeHash) != common.BytesToHash(want.CodeHash)) {
		c.fail(fmt.Errorf("account %x: hexstate %+v, go-ethereum %+v", addr, got, want))
	}
	return got, nil
}

func (c *checkedReader) Storage(addr common.Address, slot common.Hash) (common.Hash, error) {
	c.n.slots.Add(1)
	got, err := c.hex.Storage(addr, slot)
	if err != nil {
		return got, err
	}
	if want, err := c.ref.Storage(addr, slot); err != nil || got != want {
		c.fail(fmt.Errorf("storage %x slot %x: hexstate %x, go-ethereum %x (%v)", addr, slot, got, want, err))
	}
	return got, nil
}

func (c *checkedReader) Code(addr common.Address, codeHash common.Hash) []byte {
	c.n.codes.Add(1)
	got := c.hex.Code(addr, codeHash)
	if want := c.ref.Code(addr, codeHash); string(got) != string(want) {
		c.fail(fmt.Errorf("code %x: hexstate %d bytes, go-ethereum %d", codeHash, len(got), len(want)))
	}
	return got
}

func (c *checkedReader) CodeSize(addr common.Address, codeHash common.Hash) int {
	c.n.codes.Add(1)
	got := c.hex.CodeSize(addr, codeHash)
	if want := c.ref.CodeSize(addr, codeHash); got != want {
		c.fail(fmt.Errorf("code size %x: hexstate %d, go-ethereum %d", codeHash, got, want))
	}
	return got
}

func (c *checkedReader) Has(addr common.Address, codeHash common.Hash) bool {
	c.n.codes.Add(1)
	got := c.hex.Has(addr, codeHash)
	if want := c.ref.Has(addr, codeHash); got != want {
		c.fail(fmt.Errorf("has code %x: hexstate %v, go-ethereum %v", codeHash, got, want))
	}
	return got
}

// guardDB is go-ethereum's state.Database, counting the readers it hands out:
// with the StateDB reading through the hexstate Reader there must be none
// before the commit (which opens one on the new root).
type guardDB struct {
	state.Database
	readers atomic.Int64
}

func (g *guardDB) Reader(root common.Hash) (state.Reader, error) {
	g.readers.Add(1)
	return g.Database.Reader(root)
}

// chainContext is the core.ChainContext the processor needs: the headers seen
// so far and the fixtures' engine (beacon over a fake ethash, as the runner).
type chainContext struct {
	config  *params.ChainConfig
	engine  consensus.Engine
	headers map[common.Hash]*types.Header
	current *types.Header
}

func (c *chainContext) Config() *params.ChainConfig  { return c.config }
func (c *chainContext) Engine() consensus.Engine     { return c.engine }
func (c *chainContext) CurrentHeader() *types.Header { return c.current }
func (c *chainContext) GetHeader(hash common.Hash, number uint64) *types.Header {
	if h := c.headers[hash]; h != nil && h.Number.Uint64() == number {
		return h
	}
	return nil
}
func (c *chainContext) GetHeaderByHash(hash common.Hash) *types.Header { return c.headers[hash] }

// GetHeaderByNumber walks back from the current header (the parent of the block
// being executed), the chain that block is on.
func (c *chainContext) GetHeaderByNumber(number uint64) *types.Header {
	for h := c.current; h != nil; h = c.headers[h.ParentHash] {
		if h.Number.Uint64() == number {
			return h
		}
		if h.Number.Uint64() < number {
			return nil
		}
	}
	return nil
}
