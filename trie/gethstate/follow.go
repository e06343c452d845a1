package gethstate

import (
	"errors"
	"fmt"

	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethdb"
	"github.com/ethereum/go-ethereum/params"
)

// Follower keeps a Chain in step with a go-ethereum core.BlockChain through its
// live tracing hooks: the genesis allocation (OnGenesisBlock), then every
// block's changes once go-ethereum validated and committed it (OnStateUpdate,
// after OnBlockStart named the block). go-ethereum keeps executing on its own
// state; hexstate mirrors it, and each block's root is compared with its header.
//
// Hooks cannot return errors: the first one is kept for Err, and the Follower
// ignores the blocks after it.
type Follower struct {
	chain  *Chain
	code   ethdb.KeyValueWriter
	config *params.ChainConfig
	block  *types.Block // the block being processed, from OnBlockStart
	err    error
}

// NewFollower returns a Follower feeding chain; contract code goes to code (nil:
// not stored, say because go-ethereum's own database is the code store).
func NewFollower(chain *Chain, code ethdb.KeyValueWriter) *Follower {
	return &Follower{chain: chain, code: code}
}

// Hooks returns the hooks to give go-ethereum (core.BlockChainConfig's
// VmConfig.Tracer, or tests.BlockTest.Run's tracer).
func (f *Follower) Hooks() *tracing.Hooks {
	return &tracing.Hooks{
		OnBlockchainInit: func(config *params.ChainConfig) { f.config = config },
		OnGenesisBlock:   f.onGenesis,
		OnBlockStart:     func(ev tracing.BlockEvent) { f.block = ev.Block },
		OnBlockEnd:       func(error) { f.block = nil },
		OnStateUpdate:    f.onStateUpdate,
	}
}

// Err returns the first error the hooks met, nil if none.
func (f *Follower) Err() error { return f.err }

// Chain returns the chain the Follower feeds.
func (f *Follower) Chain() *Chain { return f.chain }

func (f *Follower) onGenesis(g *types.Block, alloc types.GenesisAlloc) {
	if f.err != nil {
		return
	}
	if err := f.chain.Genesis(g, alloc, f.code); err != nil {
		f.err = err
	}
}

func (f *Follower) onStateUpdate(u *tracing.StateUpdate) {
	if f.err != nil || u == nil {
		return
	}
	switch {
	case f.block == nil:
		f.err = fmt.Errorf("gethstate: state update of block %d outside OnBlockStart/OnBlockEnd", u.BlockNumber)
		return
	case f.config == nil:
		f.err = errors.New("gethstate: state update before OnBlockchainInit gave the chain config")
		return
	case f.block.NumberU64() != u.BlockNumber:
		f.err = fmt.Errorf("gethstate: state update of block %d while block %d is processed", u.BlockNumber, f.block.NumberU64())
		return
	}
	h := f.block.Header()
	if err := f.chain.ApplyTracingUpdate(h, u, KeyEncodingAt(f.config, h)); err != nil {
		f.err = err
		return
	}
	if f.code != nil {
		WriteTracingCodes(f.code, u)
	}
}
