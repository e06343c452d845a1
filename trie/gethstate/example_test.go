package gethstate_test

import (
	"context"
	"fmt"
	"log"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/consensus"
	"github.com/ethereum/go-ethereum/consensus/ethash"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/triedb"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/trie/gethstate"
)

// Example executes blocks with go-ethereum's EVM reading its state from
// hexstate: each block runs on a gethstate.Reader of its parent's frame, its
// changes come back from StateDB.CommitWithUpdate and go into a child frame
// whose root must match the header, and blocks two below the newest are
// persisted. go-ethereum's state database is still needed beside it: the
// StateDB computes the new root in go-ethereum tries, and its key-value store
// keeps the contract code the Reader serves.
func Example() {
	// A chain to import: four blocks, each sending 1000 wei; the first also
	// deploys a contract whose constructor stores 42 in slot 0.
	key, _ := crypto.HexToECDSA("b71c71a67e1177ad4e901695e1b4b9ee17ae16c6668d313eac2f96dbcda3f291")
	sender, recipient := crypto.PubkeyToAddress(key.PublicKey), common.Address{0x42}
	config := params.TestChainConfig
	gspec := &core.Genesis{Config: config, Alloc: types.GenesisAlloc{sender: {Balance: big.NewInt(1e18)}}}
	signer := types.LatestSigner(config)
	_, blocks, _ := core.GenerateChainWithGenesis(gspec, ethash.NewFaker(), 4, func(i int, g *core.BlockGen) {
		if i == 0 {
			g.AddTx(types.MustSignNewTx(key, signer, &types.LegacyTx{Nonce: g.TxNonce(sender), Gas: 100000, GasPrice: g.BaseFee(), Data: common.FromHex("602a60005500")}))
		}
		g.AddTx(types.MustSignNewTx(key, signer, &types.LegacyTx{Nonce: g.TxNonce(sender), To: &recipient, Value: big.NewInt(1000), Gas: 21000, GasPrice: g.BaseFee()}))
	})
	contract := crypto.CreateAddress(sender, 0)

	// The client: go-ethereum's state database and code store, hexstate's Chain.
	kv := rawdb.NewMemoryDatabase()
	tdb := triedb.NewDatabase(kv, triedb.HashDefaults)
	sdb := state.NewDatabase(tdb, state.NewCodeDB(kv))
	genesis, err := gspec.Commit(kv, tdb, nil)
	if err != nil {
		log.Fatal(err)
	}
	db, err := trie.Open(trie.NewMemoryBackend(), nil) // rocks.Open(dir, nil) on disk
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	chain, err := gethstate.NewChain(db, gethstate.ChainOptions{FinalityDepth: 2})
	if err != nil {
		log.Fatal(err)
	}
	if err := chain.Genesis(genesis, gspec.Alloc, nil); err != nil { // the code is in kv already
		log.Fatal(err)
	}
	headers := exHeaders{config: config, engine: ethash.NewFaker(), byHash: map[common.Hash]*types.Header{genesis.Hash(): genesis.Header()}}
	processor := core.NewStateProcessor(&headers)

	for _, block := range blocks {
		parent := headers.byHash[block.ParentHash()]
		reader, err := chain.Reader(block.ParentHash(), parent.Root, kv)
		if err != nil {
			log.Fatal(err)
		}
		statedb, err := state.NewWithReader(parent.Root, sdb, reader)
		if err != nil {
			log.Fatal(err)
		}
		headers.current = parent
		if _, err := processor.Process(context.Background(), block, statedb, nil, nil, vm.Config{}, nil); err != nil {
			log.Fatal(err)
		}
		rules := config.Rules(block.Number(), block.Difficulty().Sign() == 0, block.Time())
		_, update, err := statedb.CommitWithUpdate(rules, block.NumberU64())
		if err != nil {
			log.Fatal(err)
		}
		// Applies the update on the parent's frame, checks the root against the
		// header, persists the block two below.
		if err := chain.ApplyUpdate(block.Header(), update); err != nil {
			log.Fatal(err)
		}
		headers.byHash[block.Hash()] = block.Header()
		fmt.Printf("block %d: %d txs, root matches the header\n", block.NumberU64(), len(block.Transactions()))
	}

	persisted, _ := chain.Persisted()
	fmt.Println("persisted block:", persisted, "frames held:", chain.Len())
	head, _ := chain.Frame(blocks[len(blocks)-1].Hash())
	r := gethstate.NewReader(head, kv)
	acc, _ := r.Account(recipient)
	fmt.Println("recipient balance:", acc.Balance)
	slot, _ := r.Storage(contract, common.Hash{})
	fmt.Println("contract slot 0:", slot.Big())
	fmt.Println("hexstate persisted root is the header's:", mustRoot(db) == hashkey.Hash(blocks[persisted-1].Root()))
	// Output:
	// block 1: 2 txs, root matches the header
	// block 2: 1 txs, root matches the header
	// block 3: 1 txs, root matches the header
	// block 4: 1 txs, root matches the header
	// persisted block: 2 frames held: 2
	// recipient balance: 4000
	// contract slot 0: 42
	// hexstate persisted root is the header's: true
}

func mustRoot(db *trie.DB) hashkey.Hash {
	root, err := db.StateRoot()
	if err != nil {
		log.Fatal(err)
	}
	return root
}

// exHeaders is the core.ChainContext a processor needs: the chain config, the
// consensus engine (rewards) and the headers (BLOCKHASH, the parent header).
type exHeaders struct {
	config  *params.ChainConfig
	engine  consensus.Engine
	byHash  map[common.Hash]*types.Header
	current *types.Header
}

func (c *exHeaders) Config() *params.ChainConfig  { return c.config }
func (c *exHeaders) Engine() consensus.Engine     { return c.engine }
func (c *exHeaders) CurrentHeader() *types.Header { return c.current }
func (c *exHeaders) GetHeader(hash common.Hash, number uint64) *types.Header {
	if h := c.byHash[hash]; h != nil && h.Number.Uint64() == number {
		return h
	}
	return nil
}
func (c *exHeaders) GetHeaderByHash(hash common.Hash) *types.Header { return c.byHash[hash] }
func (c *exHeaders) GetHeaderByNumber(number uint64) *types.Header {
	for h := c.current; h != nil; h = c.byHash[h.ParentHash] {
		if h.Number.Uint64() == number {
			return h
		}
	}
	return nil
}
