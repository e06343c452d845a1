package gethstate

import (
	"errors"
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethdb"
	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie"
)

var (
	// ErrRootMismatch is wrapped when a block's state root in hexstate differs
	// from its header's.
	ErrRootMismatch = errors.New("gethstate: state root differs from the header's")
	// ErrUnknownParent is wrapped when a block's parent state is not held: it was
	// never inserted, or it was on a fork that persisting another block abandoned.
	ErrUnknownParent = errors.New("gethstate: parent state unknown (never inserted, or abandoned by a persist)")
)

// ChainOptions configures a Chain.
type ChainOptions struct {
	// FinalityDepth is how far below a newly inserted block its ancestor counts
	// as final and is persisted (1: the parent). Zero persists nothing on its
	// own: the client calls Finalize when consensus finalizes a block.
	FinalityDepth uint64
	// MayFinalize, when set, is asked before a block is persisted because of
	// FinalityDepth; false defers it (say, the block is not on the chain
	// consensus is finalizing). It is not asked for Finalize.
	MayFinalize func(hash common.Hash, number uint64) bool
	// VerifyOrigins makes ApplyUpdate and ApplyTracingUpdate check the parent
	// frame against the update's previous values before applying it.
	VerifyOrigins bool
}

// ChainStats counts a Chain's work.
type ChainStats struct {
	Blocks    int          // blocks inserted (roots compared with their headers)
	Persisted int          // blocks persisted
	Dropped   int          // frames dropped because a persist abandoned their fork
	Origins   OriginCounts // previous values compared (VerifyOrigins)
}

// Chain is a client's block loop on hexstate: it keeps one frame per block not
// yet persisted, finds a block's parent frame by block hash or, failing that, by
// state root, compares each block's state root with its header, persists blocks
// as they become final and drops the forks that persisting abandons. Blocks on
// competing forks live side by side until then, so a reorg onto another fork is
// just a block whose parent is not the newest one.
//
// A Chain is not safe for concurrent use.
type Chain struct {
	db     *trie.DB
	opts   ChainOptions
	base   *block                 // the persisted state
	blocks map[common.Hash]*block // unpersisted blocks (and the base, once named) by hash
	roots  map[common.Hash]*block // the same by state root
	stats  ChainStats
}

// block is one state the Chain holds.
type block struct {
	hash, parent, root common.Hash
	number             uint64
	frame              *trie.Frame
}

// NewChain returns a Chain on db's persisted state.
func NewChain(db *trie.DB, opts ChainOptions) (*Chain, error) {
	root, err := db.StateRoot()
	if err != nil {
		return nil, fmt.Errorf("gethstate: new chain: %w", err)
	}
	c := &Chain{db: db, opts: opts, blocks: map[common.Hash]*block{}, roots: map[common.Hash]*block{}}
	c.base = &block{root: common.Hash(root), number: db.Block(), frame: db.Begin()}
	c.roots[c.base.root] = c.base
	return c, nil
}

// Genesis starts the chain at genesis block g with allocation alloc, writing the
// genesis code to code (nil: not at all). On a fresh database the allocation is
// written to a frame whose root must equal g's; on a database that already holds
// g's state (reopened at genesis) it only names the persisted state g.
func (c *Chain) Genesis(g *types.Block, alloc types.GenesisAlloc, code ethdb.KeyValueWriter) error {
	if c.base.root == g.Root() {
		c.base.hash = g.Hash()
		c.blocks[g.Hash()] = c.base
		return nil
	}
	if c.base.root != common.Hash(hashkey.EmptyRoot) || len(c.blocks) > 0 {
		return fmt.Errorf("gethstate: genesis %x: the database holds state root %x of block %d", g.Hash(), c.base.root, c.base.number)
	}
	fr := c.base.frame.Begin()
	if err := ApplyAlloc(fr, alloc, code); err != nil {
		fr.Rollback()
		return err
	}
	return c.Insert(g.Header(), fr)
}

// Parent returns the frame holding the state of block parentHash, or failing
// that (a block hash the chain was not told about, such as the persisted block
// after a restart) a frame whose state root is parentRoot.
func (c *Chain) Parent(parentHash, parentRoot common.Hash) (*trie.Frame, error) {
	if b := c.blocks[parentHash]; b != nil {
		return b.frame, nil
	}
	if b := c.roots[parentRoot]; b != nil {
		return b.frame, nil
	}
	return nil, fmt.Errorf("%w: block %x, state root %x", ErrUnknownParent, parentHash, parentRoot)
}

// Frame returns the frame of block hash, if the chain holds it.
func (c *Chain) Frame(hash common.Hash) (*trie.Frame, bool) {
	b := c.blocks[hash]
	if b == nil {
		return nil, false
	}
	return b.frame, true
}

// Reader returns a Reader of the parent state of a block (see Parent), with
// contract code from code: the read source for state.NewWithReader.
func (c *Chain) Reader(parentHash, parentRoot common.Hash, code ethdb.KeyValueReader) (*Reader, error) {
	fr, err := c.Parent(parentHash, parentRoot)
	if err != nil {
		return nil, err
	}
	return NewReader(fr, code), nil
}

// Insert records fr, a frame begun on block h's parent frame holding h's
// changes, as block h. A state root other than h.Root rolls fr back and returns
// an error wrapping ErrRootMismatch. Then the block FinalityDepth below h is
// persisted, if there is one not yet persisted.
func (c *Chain) Insert(h *types.Header, fr *trie.Frame) error {
	hash := h.Hash()
	number := h.Number.Uint64()
	root, err := fr.StateRoot()
	if err != nil {
		fr.Rollback()
		return fmt.Errorf("gethstate: block %d %x: state root: %w", number, hash, err)
	}
	if common.Hash(root) != h.Root {
		fr.Rollback()
		return fmt.Errorf("%w: block %d %x: hexstate %x, header %x", ErrRootMismatch, number, hash, common.Hash(root), h.Root)
	}
	c.stats.Blocks++
	if c.blocks[hash] != nil { // executed again: keep the frame we have
		fr.Rollback()
		return nil
	}
	b := &block{hash: hash, parent: h.ParentHash, root: h.Root, number: number, frame: fr}
	c.blocks[hash] = b
	c.roots[b.root] = b
	if d := c.opts.FinalityDepth; d > 0 {
		anc := b
		for i := uint64(0); i < d && anc != nil; i++ {
			anc = c.blocks[anc.parent]
		}
		if anc != nil && anc != c.base && anc.number > c.base.number &&
			(c.opts.MayFinalize == nil || c.opts.MayFinalize(anc.hash, anc.number)) {
			if err := c.persist(anc); err != nil {
				return err
			}
		}
	}
	return nil
}

// Finalize persists block hash (with its unpersisted ancestors) and drops the
// forks that do not descend from it.
func (c *Chain) Finalize(hash common.Hash) error {
	b := c.blocks[hash]
	if b == nil {
		return fmt.Errorf("gethstate: finalize %x: %w", hash, ErrUnknownParent)
	}
	if b == c.base {
		return nil
	}
	if b.number <= c.base.number {
		return fmt.Errorf("gethstate: finalize block %d %x: block %d is persisted already", b.number, hash, c.base.number)
	}
	return c.persist(b)
}

// persist persists b and drops every block that does not descend from it.
func (c *Chain) persist(b *block) error {
	if err := c.db.Persist(b.frame, b.number); err != nil {
		return fmt.Errorf("gethstate: persist block %d %x: %w", b.number, b.hash, err)
	}
	c.stats.Persisted++
	c.base = b
	keep := map[common.Hash]*block{}
	for h, x := range c.blocks {
		if c.descends(x, b) {
			keep[h] = x
		} else {
			c.stats.Dropped++
		}
	}
	c.blocks = keep
	c.roots = map[common.Hash]*block{b.root: b}
	for _, x := range keep {
		if _, ok := c.roots[x.root]; !ok {
			c.roots[x.root] = x
		}
	}
	return nil
}

// descends reports whether x is b or a descendant of b.
func (c *Chain) descends(x, b *block) bool {
	for x != nil && x.number >= b.number {
		if x == b {
			return true
		}
		x = c.blocks[x.parent]
	}
	return false
}

// ApplyUpdate applies block h's changes u, as StateDB.CommitWithUpdate returns
// them, in a frame begun on h's parent frame and inserts it (see Insert).
func (c *Chain) ApplyUpdate(h *types.Header, u *state.StateUpdate) error {
	return c.apply(h, u.OriginRoot, func(parent *trie.Frame) (OriginCounts, error) {
		return VerifyStateUpdateOrigins(parent, u)
	}, func(fr *trie.Frame) error {
		return ApplyStateUpdate(fr, u)
	})
}

// ApplyTracingUpdate is ApplyUpdate for the OnStateUpdate hook's form; keys says
// how u's storage keys are encoded (KeyEncodingAt).
func (c *Chain) ApplyTracingUpdate(h *types.Header, u *tracing.StateUpdate, keys state.StorageKeyEncoding) error {
	return c.apply(h, u.OriginRoot, func(parent *trie.Frame) (OriginCounts, error) {
		return VerifyTracingOrigins(parent, u, keys)
	}, func(fr *trie.Frame) error {
		return ApplyTracingUpdate(fr, u, keys)
	})
}

func (c *Chain) apply(h *types.Header, originRoot common.Hash, verify func(*trie.Frame) (OriginCounts, error), write func(*trie.Frame) error) error {
	parent, err := c.Parent(h.ParentHash, originRoot)
	if err != nil {
		return fmt.Errorf("gethstate: block %d %x: %w", h.Number.Uint64(), h.Hash(), err)
	}
	if c.opts.VerifyOrigins {
		n, err := verify(parent)
		c.stats.Origins.Accounts += n.Accounts
		c.stats.Origins.Slots += n.Slots
		if err != nil {
			return err
		}
	}
	fr := parent.Begin()
	if err := write(fr); err != nil {
		fr.Rollback()
		return err
	}
	return c.Insert(h, fr)
}

// Stats returns what the chain has done so far.
func (c *Chain) Stats() ChainStats { return c.stats }

// Len returns how many block states the chain holds besides the persisted one.
func (c *Chain) Len() int {
	n := len(c.blocks)
	if c.blocks[c.base.hash] == c.base {
		n--
	}
	return n
}

// Persisted returns the number and hash (zero when not known) of the persisted block.
func (c *Chain) Persisted() (uint64, common.Hash) { return c.base.number, c.base.hash }
