package main

import (
	"bytes"
	"math/rand/v2"
	"slices"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie"
	"github.com/holiman/uint256"
)

// The workload is generated once, from the seed, before any implementation
// runs; every implementation replays exactly the same build and blocks. Ops
// carry absolute values (the new nonce and balance, the new slot value), so an
// implementation needs no model of its own.

// wlConfig is the shape of a workload.
type wlConfig struct {
	accounts      int
	storageFrac   float64
	blocks        int
	blockAccounts int
	blockSlots    int
	seed          uint64
}

// wlAccount is one account of the initial state.
type wlAccount struct {
	hash    hashkey.Hash
	nonce   uint64
	balance uint256.Int
	code    hashkey.Hash
}

// wlAccOp sets the nonce and balance of account idx (its code and storage stay).
type wlAccOp struct {
	idx     int32
	nonce   uint64
	balance uint256.Int
}

// wlSlotOp sets slot of account idx to val; zero deletes the slot.
type wlSlotOp struct {
	idx  int32
	slot hashkey.Hash
	val  uint256.Int
}

type wlBlock struct {
	accOps  []wlAccOp
	slotOps []wlSlotOp
}

// workload is the initial state (accounts sorted by hash, storage sorted by
// slot hash) and the blocks to apply on it.
type workload struct {
	cfg      wlConfig
	accounts []wlAccount
	storage  map[int32][]trie.SlotLeaf // initial storage by account index
	blocks   []wlBlock
	slots    int // initial slots in all
	newSlots int // slot ops that create a slot
	delSlots int // slot ops that delete one
}

func randHash(r *rand.Rand) (h hashkey.Hash) {
	for i := 0; i < 32; i += 8 {
		v := r.Uint64()
		for j := range 8 {
			h[i+j] = byte(v >> (8 * j))
		}
	}
	return h
}

// randValue256 is a non-zero value of 1 to 32 bytes, small ones frequent.
func randValue256(r *rand.Rand) uint256.Int {
	var v uint256.Int
	if r.IntN(2) == 0 {
		v.SetUint64(1 + r.Uint64N(1<<16))
		return v
	}
	n := 1 + r.IntN(32)
	var b [32]byte
	for i := range n {
		b[i] = byte(r.Uint32())
	}
	b[0] |= 1
	v.SetBytes(b[:n])
	return v
}

func randBalance(r *rand.Rand) uint256.Int {
	var v uint256.Int
	v.SetUint64(r.Uint64N(1 << 62))
	if r.IntN(8) == 0 {
		v.Mul(&v, uint256.NewInt(1_000_000_007))
	}
	return v
}

// genWorkload draws the initial state and the blocks from cfg.seed.
func genWorkload(cfg wlConfig) *workload {
	r := rand.New(rand.NewPCG(cfg.seed, 0x7472696562656e63))
	w := &workload{cfg: cfg, storage: map[int32][]trie.SlotLeaf{}}
	w.accounts = make([]wlAccount, cfg.accounts)
	for i := range w.accounts {
		w.accounts[i] = wlAccount{hash: randHash(r), nonce: r.Uint64N(1000), balance: randBalance(r), code: hashkey.EmptyCodeHash}
	}
	slices.SortFunc(w.accounts, func(a, b wlAccount) int { return bytes.Compare(a.hash[:], b.hash[:]) })
	w.accounts = slices.CompactFunc(w.accounts, func(a, b wlAccount) bool { return a.hash == b.hash })

	// Accounts with storage are contracts: they get a code hash and 1-8 slots.
	nst := int(float64(len(w.accounts)) * cfg.storageFrac)
	withStorage := r.Perm(len(w.accounts))[:nst]
	slices.Sort(withStorage)
	cur := make(map[int32][]hashkey.Hash, nst) // the model: live slots per account
	stIdx := make([]int32, 0, nst)
	for _, i := range withStorage {
		idx := int32(i)
		w.accounts[i].code = randHash(r)
		n := 1 + r.IntN(8)
		s := make([]trie.SlotLeaf, n)
		for j := range s {
			s[j] = trie.SlotLeaf{Hash: randHash(r), Value: randValue256(r)}
		}
		slices.SortFunc(s, func(a, b trie.SlotLeaf) int { return bytes.Compare(a.Hash[:], b.Hash[:]) })
		s = slices.CompactFunc(s, func(a, b trie.SlotLeaf) bool { return a.Hash == b.Hash })
		w.storage[idx] = s
		w.slots += len(s)
		for _, sl := range s {
			cur[idx] = append(cur[idx], sl.Hash)
		}
		stIdx = append(stIdx, idx)
	}

	nonces := make([]uint64, len(w.accounts))
	for i := range w.accounts {
		nonces[i] = w.accounts[i].nonce
	}
	w.blocks = make([]wlBlock, cfg.blocks)
	for b := range w.blocks {
		blk := &w.blocks[b]
		blk.accOps = make([]wlAccOp, cfg.blockAccounts)
		for k := range blk.accOps {
			i := r.IntN(len(w.accounts))
			nonces[i]++
			blk.accOps[k] = wlAccOp{idx: int32(i), nonce: nonces[i], balance: randBalance(r)}
		}
		if len(stIdx) == 0 {
			continue
		}
		blk.slotOps = make([]wlSlotOp, cfg.blockSlots)
		for k := range blk.slotOps {
			idx := stIdx[r.IntN(len(stIdx))]
			live := cur[idx]
			op := wlSlotOp{idx: idx}
			switch x := r.IntN(20); {
			case x < 3 && len(live) > 1: // delete (never the last slot)
				j := r.IntN(len(live))
				op.slot = live[j]
				live[j] = live[len(live)-1]
				cur[idx] = live[:len(live)-1]
				w.delSlots++
			case x < 8 || len(live) == 0: // a new slot
				op.slot = randHash(r)
				op.val = randValue256(r)
				cur[idx] = append(live, op.slot)
				w.newSlots++
			default: // overwrite an existing slot
				op.slot = live[r.IntN(len(live))]
				op.val = randValue256(r)
			}
			blk.slotOps[k] = op
		}
	}
	return w
}

// leaves returns the initial state as bulk-load input.
func (w *workload) leaves() []trie.AccountLeaf {
	out := make([]trie.AccountLeaf, len(w.accounts))
	for i := range w.accounts {
		a := &w.accounts[i]
		out[i] = trie.AccountLeaf{
			AddrHash: a.hash,
			Account:  trie.Account{Nonce: a.nonce, Balance: a.balance, CodeHash: a.code},
			Storage:  w.storage[int32(i)],
		}
	}
	return out
}
