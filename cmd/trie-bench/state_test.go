package main

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rlp"
	gethtrie "github.com/ethereum/go-ethereum/trie"
	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/rocks"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
	"github.com/holiman/uint256"
)

// stateOracle is the expected state: a model plus geth tries built from it.
// Accounts live in a plain geth trie keyed by addrHash whose values are the RLP
// of types.StateAccount; each account's storage is a plain geth trie keyed by
// slotHash whose values are RLP(trimmed big-endian value).
type stateOracle struct {
	accounts map[hashkey.Hash]trie.Account
	storage  map[hashkey.Hash]map[hashkey.Hash]uint256.Int
	accTrie  *gethtrie.Trie
	stTries  map[hashkey.Hash]*gethtrie.Trie
	touched  map[hashkey.Hash]bool
}

func newStateOracle() *stateOracle {
	return &stateOracle{
		accounts: map[hashkey.Hash]trie.Account{},
		storage:  map[hashkey.Hash]map[hashkey.Hash]uint256.Int{},
		accTrie:  newGethTrie(),
		stTries:  map[hashkey.Hash]*gethtrie.Trie{},
		touched:  map[hashkey.Hash]bool{},
	}
}

func (o *stateOracle) updateAccount(a hashkey.Hash, acc trie.Account) {
	o.accounts[a] = acc
	o.touched[a] = true
}

func (o *stateOracle) deleteAccount(a hashkey.Hash) {
	delete(o.accounts, a)
	delete(o.storage, a)
	delete(o.stTries, a)
	o.touched[a] = true
}

func (o *stateOracle) updateStorage(a, slot hashkey.Hash, v *uint256.Int) {
	st := o.storage[a]
	if st == nil {
		st = map[hashkey.Hash]uint256.Int{}
		o.storage[a] = st
	}
	tr := o.stTries[a]
	if tr == nil {
		tr = newGethTrie()
		o.stTries[a] = tr
	}
	if v.IsZero() {
		delete(st, slot)
		must(tr.Delete(slot[:]))
	} else {
		st[slot] = *v
		must(tr.Update(slot[:], slotRLP(v)))
	}
	o.touched[a] = true
}

// flush writes the touched accounts, with their storage roots, into the account trie.
func (o *stateOracle) flush() {
	for a := range o.touched {
		if acc, ok := o.accounts[a]; ok {
			must(o.accTrie.Update(a[:], o.accountRLP(a, acc)))
		} else {
			must(o.accTrie.Delete(a[:]))
		}
	}
	clear(o.touched)
}

func (o *stateOracle) storageRoot(a hashkey.Hash) hashkey.Hash {
	if tr := o.stTries[a]; tr != nil {
		return hashkey.Hash(tr.Hash())
	}
	return hashkey.EmptyRoot
}

func (o *stateOracle) accountRLP(a hashkey.Hash, acc trie.Account) []byte {
	bal := acc.Balance
	enc, err := rlp.EncodeToBytes(&types.StateAccount{
		Nonce:    acc.Nonce,
		Balance:  &bal,
		Root:     common.Hash(o.storageRoot(a)),
		CodeHash: acc.CodeHash[:],
	})
	must(err)
	return enc
}

func slotRLP(v *uint256.Int) []byte {
	enc, err := rlp.EncodeToBytes(v.Bytes())
	must(err)
	return enc
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// stateOp is one state mutation, kept for failure reports.
type stateOp struct {
	what       string
	addr, slot hashkey.Hash
	acc        trie.Account
	val        uint256.Int
}

func (s stateOp) String() string {
	switch s.what {
	case "account":
		return fmt.Sprintf("UpdateAccount(%x, {Nonce:%d Balance:%v CodeHash:%x})", s.addr[:4], s.acc.Nonce, &s.acc.Balance, s.acc.CodeHash[:4])
	case "delete":
		return fmt.Sprintf("DeleteAccount(%x)", s.addr[:4])
	default:
		return fmt.Sprintf("UpdateStorage(%x, %x, %v)", s.addr[:4], s.slot[:4], &s.val)
	}
}

// stateGen draws random block contents over a small universe of accounts and
// slots so that updates, deletions and re-creations are frequent.
type stateGen struct {
	r     *rand.Rand
	addrs []hashkey.Hash
	slots []hashkey.Hash
}

func newStateGen(r *rand.Rand) *stateGen {
	g := &stateGen{r: r}
	for range 40 {
		g.addrs = append(g.addrs, hashkey.Hash(randBytes(r, 32)))
	}
	for range 64 {
		g.slots = append(g.slots, hashkey.Hash(randBytes(r, 32)))
	}
	// a few near-colliding hashes for shared prefixes in both tries
	for i := range 4 {
		a := g.addrs[i]
		a[31] ^= 1
		g.addrs = append(g.addrs, a)
		s := g.slots[i]
		s[20] ^= 0x10
		g.slots = append(g.slots, s)
	}
	return g
}

func (g *stateGen) account() trie.Account {
	var acc trie.Account
	acc.Nonce = uint64(g.r.IntN(3)) * g.r.Uint64N(1000)
	switch g.r.IntN(3) {
	case 0:
	case 1:
		acc.Balance.SetUint64(g.r.Uint64N(1e6))
	default:
		acc.Balance.SetBytes(randBytes(g.r, 1+g.r.IntN(32)))
	}
	acc.CodeHash = hashkey.EmptyCodeHash
	if g.r.IntN(4) == 0 {
		acc.CodeHash = hashkey.Hash(randBytes(g.r, 32))
	}
	return acc
}

func (g *stateGen) value() uint256.Int {
	var v uint256.Int
	switch g.r.IntN(5) {
	case 0: // zero: deletes
	case 1, 2:
		v.SetUint64(1 + g.r.Uint64N(255))
	default:
		v.SetBytes(randBytes(g.r, 1+g.r.IntN(32)))
	}
	return v
}

// block draws the ops of one block given the current model.
func (g *stateGen) block(o *stateOracle) []stateOp {
	var ops []stateOp
	existing := slices.Collect(maps.Keys(o.accounts))
	slices.SortFunc(existing, func(a, b hashkey.Hash) int { return bytes.Compare(a[:], b[:]) })
	exists := func(a hashkey.Hash) bool { _, ok := o.accounts[a]; return ok }
	if g.r.IntN(8) == 0 { // bulk creation: grows the account trie
		for range 50 + g.r.IntN(100) {
			a := hashkey.Hash(randBytes(g.r, 32))
			g.addrs = append(g.addrs, a)
			ops = append(ops, stateOp{what: "account", addr: a, acc: g.account()})
			for range g.r.IntN(3) {
				ops = append(ops, stateOp{what: "storage", addr: a, slot: g.slots[g.r.IntN(len(g.slots))], val: g.value()})
			}
		}
	}
	for range 1 + g.r.IntN(30) {
		a := g.addrs[g.r.IntN(len(g.addrs))]
		if len(existing) > 0 && g.r.IntN(3) > 0 {
			a = existing[g.r.IntN(len(existing))]
		}
		switch x := g.r.IntN(20); {
		case x < 5:
			ops = append(ops, stateOp{what: "account", addr: a, acc: g.account()})
		case x < 15:
			if !exists(a) && !slices.ContainsFunc(ops, func(s stateOp) bool { return s.addr == a && s.what == "account" }) {
				ops = append(ops, stateOp{what: "account", addr: a, acc: g.account()})
			}
			n := 1 + g.r.IntN(4)
			if g.r.IntN(10) == 0 {
				n = 50 + g.r.IntN(100) // a storage-heavy account
			}
			for range n {
				slot := g.slots[g.r.IntN(len(g.slots))]
				if g.r.IntN(4) == 0 {
					slot = hashkey.Hash(randBytes(g.r, 32))
				}
				ops = append(ops, stateOp{what: "storage", addr: a, slot: slot, val: g.value()})
			}
		case x < 18:
			ops = append(ops, stateOp{what: "delete", addr: a})
		default: // re-create within the block: storage must start empty
			ops = append(ops, stateOp{what: "delete", addr: a}, stateOp{what: "account", addr: a, acc: g.account()})
		}
	}
	// keep only deletes of accounts that exist at that point
	live := maps.Clone(o.accounts)
	var out []stateOp
	for _, op := range ops {
		_, ok := live[op.addr]
		switch op.what {
		case "delete":
			if !ok {
				continue
			}
			delete(live, op.addr)
		case "account":
			live[op.addr] = op.acc
		case "storage":
			if !ok {
				continue
			}
		}
		out = append(out, op)
	}
	return out
}

func applyState(tx *trie.Frame, o *stateOracle, ops []stateOp) error {
	for i, op := range ops {
		var err error
		switch op.what {
		case "account":
			err = tx.UpdateAccount(op.addr, op.acc)
			if o != nil {
				o.updateAccount(op.addr, op.acc)
			}
		case "delete":
			err = tx.DeleteAccount(op.addr)
			if o != nil {
				o.deleteAccount(op.addr)
			}
		default:
			v := op.val
			err = tx.UpdateStorage(op.addr, op.slot, &v)
			if o != nil {
				o.updateStorage(op.addr, op.slot, &v)
			}
		}
		if err != nil {
			return fmt.Errorf("op %d %v: %w", i, op, err)
		}
	}
	if o != nil {
		o.flush()
	}
	return nil
}

// stateReader is what checkState reads from: a frame.
type stateReader = *trie.Frame

// checkState compares tx with the oracle: state root, accounts, storage roots,
// storage values, and account and storage proofs verified crosswise.
func checkState(r *rand.Rand, g *stateGen, tx stateReader, o *stateOracle) error {
	root, err := tx.StateRoot()
	if err != nil {
		return fmt.Errorf("StateRoot: %w", err)
	}
	if want := hashkey.Hash(o.accTrie.Hash()); root != want {
		return fmt.Errorf("state root %v, want %v (%d accounts)", root, want, len(o.accounts))
	}
	addrs := slices.Clone(g.addrs)
	r.Shuffle(len(addrs), func(i, j int) { addrs[i], addrs[j] = addrs[j], addrs[i] })
	for _, a := range addrs[:12] {
		want, wantOK := o.accounts[a]
		got, ok, err := tx.Account(a)
		if err != nil {
			return fmt.Errorf("Account(%x): %w", a[:4], err)
		}
		if ok != wantOK || (ok && (got.Nonce != want.Nonce || !got.Balance.Eq(&want.Balance) || got.CodeHash != want.CodeHash)) {
			return fmt.Errorf("Account(%x) = %+v, %v; want %+v, %v", a[:4], got, ok, want, wantOK)
		}
		var wantRLP []byte
		if wantOK {
			wantRLP = o.accountRLP(a, want)
			sr, err := tx.StorageRoot(a)
			if err != nil {
				return fmt.Errorf("StorageRoot(%x): %w", a[:4], err)
			}
			if wsr := o.storageRoot(a); sr != wsr {
				return fmt.Errorf("StorageRoot(%x) = %v, want %v (%d slots)", a[:4], sr, wsr, len(o.storage[a]))
			}
		}
		if len(o.accounts) > 0 {
			ours, err := tx.AccountProof(a)
			if err != nil {
				return fmt.Errorf("AccountProof(%x): %w", a[:4], err)
			}
			theirs, err := gethProve(o.accTrie, a[:])
			must(err)
			if err := crossVerify(root, a[:], wantRLP, ours, theirs); err != nil {
				return fmt.Errorf("account %x: %w", a[:4], err)
			}
		}
		if !wantOK || len(o.storage[a]) == 0 {
			continue
		}
		sr := o.storageRoot(a)
		slots := slices.Collect(maps.Keys(o.storage[a]))
		slots = append(slots, g.slots[r.IntN(len(g.slots))], hashkey.Hash(randBytes(r, 32)))
		for range 4 {
			s := slots[r.IntN(len(slots))]
			wantV := o.storage[a][s]
			gotV, err := tx.Storage(a, s)
			if err != nil {
				return fmt.Errorf("Storage(%x, %x): %w", a[:4], s[:4], err)
			}
			if !gotV.Eq(&wantV) {
				return fmt.Errorf("Storage(%x, %x) = %v, want %v", a[:4], s[:4], &gotV, &wantV)
			}
			var wantRLP []byte
			if !wantV.IsZero() {
				wantRLP = slotRLP(&wantV)
			}
			ours, err := tx.StorageProof(a, s)
			if err != nil {
				return fmt.Errorf("StorageProof(%x, %x): %w", a[:4], s[:4], err)
			}
			theirs, err := gethProve(o.stTries[a], s[:])
			must(err)
			if err := crossVerify(sr, s[:], wantRLP, ours, theirs); err != nil {
				return fmt.Errorf("storage %x/%x: %w", a[:4], s[:4], err)
			}
		}
	}
	return nil
}

// crossVerify checks hexstate's proof with geth's verifier and geth's proof
// with hexstate's, both against want (nil: absent).
func crossVerify(root hashkey.Hash, key, want []byte, ours, theirs [][]byte) error {
	if v, err := gethVerify(root, key, ours); err != nil || !bytes.Equal(v, want) {
		return fmt.Errorf("geth VerifyProof of hexstate's proof = %s, %v; want %s\nhexstate proof: %x\ngeth proof:     %x", hv(v), err, hv(want), ours, theirs)
	}
	if v, err := trie.VerifyProof(root, key, theirs); err != nil || !bytes.Equal(v, want) {
		return fmt.Errorf("hexstate VerifyProof of geth's proof = %s, %v; want %s\ngeth proof: %x", hv(v), err, hv(want), theirs)
	}
	return nil
}

type stateVariant struct {
	name    string
	format  vertex.Format
	backend func(t *testing.T) trie.Backend
}

func memBackend(*testing.T) trie.Backend { return trie.NewMemoryBackend() }

func rocksBackend(t *testing.T) trie.Backend {
	s, err := rocks.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestStateDifferential applies random blocks of account and storage changes to
// hexstate and to geth tries and compares state roots and proofs after every block.
func TestStateDifferential(t *testing.T) {
	base := baseSeed(t)
	blocks := 400
	if testing.Short() {
		blocks = 60
	}
	t.Logf("base seed %d (replay with -difftest.seed=%d)", base, base)
	variants := []stateVariant{
		{"mem-v1", vertex.FormatV1, memBackend},
		{"mem-v2", vertex.FormatV2, memBackend},
		{"rocks-v2", vertex.FormatV2, rocksBackend},
	}
	for vi, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			n := blocks
			if strings.HasPrefix(v.name, "rocks") {
				n = blocks / 3
			}
			seed := base + uint64(vi)
			if err := runState(t, v, seed, n); err != nil {
				t.Fatalf("%s, seed %d: %v\nreplay: go test -run 'TestStateDifferential/%s' -difftest.seed=%d", v.name, seed, err, v.name, base)
			}
		})
	}
}

func runState(t *testing.T, v stateVariant, seed uint64, blocks int) error {
	r := rand.New(rand.NewPCG(seed, 99))
	g := newStateGen(r)
	o := newStateOracle()
	b := v.backend(t)
	db, err := trie.Open(b, &trie.Options{Format: v.format})
	if err != nil {
		return err
	}
	var tip *trie.Frame // nil: the persisted base
	tipPersisted := false
	begin := func() *trie.Frame {
		if tip == nil {
			return db.Begin()
		}
		return tip.Begin()
	}
	persistEvery := 1 + r.IntN(5)
	for block := uint64(1); block <= uint64(blocks); block++ {
		if r.IntN(6) == 0 { // a fork that is rolled back must leave no trace
			fork := begin()
			if err := applyState(fork, nil, g.block(o)); err != nil {
				return fmt.Errorf("block %d fork: %w", block, err)
			}
			if _, err := fork.StateRoot(); err != nil {
				return fmt.Errorf("block %d fork StateRoot: %w", block, err)
			}
			fork.Rollback()
		}
		tx := begin()
		ops := g.block(o)
		err := safely(func() error {
			if err := applyState(tx, o, ops); err != nil {
				return err
			}
			return checkState(r, g, tx, o)
		})
		if err != nil {
			return fmt.Errorf("block %d: %w\nops of the block:\n%s", block, err, fmtStateOps(ops))
		}
		tip, tipPersisted = tx, false
		if block%uint64(persistEvery) == 0 {
			if err := db.Persist(tx, block); err != nil {
				return fmt.Errorf("block %d: Persist: %w", block, err)
			}
			got, err := db.StateRoot()
			if want := hashkey.Hash(o.accTrie.Hash()); err != nil || got != want {
				return fmt.Errorf("block %d: after Persist db.StateRoot = %v, %v; want %v", block, got, err, want)
			}
			tipPersisted = true
			if r.IntN(2) == 0 {
				tip = nil // continue from db.Begin(); otherwise from tx.Begin()
			}
		}
	}
	// restart: persist the tip, close, reopen on the same backend and re-check
	if tip != nil && !tipPersisted { // persisting the base again: see TestPersistTwice
		if err := db.Persist(tip, uint64(blocks)); err != nil {
			return fmt.Errorf("final Persist: %w", err)
		}
	}
	if strings.HasPrefix(v.name, "mem") {
		if err := db.Close(); err != nil {
			return fmt.Errorf("Close: %w", err)
		}
		if db, err = trie.Open(b, &trie.Options{Format: v.format}); err != nil {
			return fmt.Errorf("reopen: %w", err)
		}
	}
	defer db.Close()
	if err := safely(func() error { return checkState(r, g, db.Begin(), o) }); err != nil {
		return fmt.Errorf("after reopen: %w", err)
	}
	return nil
}

func fmtStateOps(ops []stateOp) string {
	var sb strings.Builder
	for _, op := range ops {
		fmt.Fprintf(&sb, "\t%v\n", op)
	}
	return sb.String()
}
