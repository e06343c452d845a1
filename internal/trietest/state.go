package trietest

// State-API fixtures: the expected-state Model, its roots computed independently (RebuildRoot, OracleRoot), a reference RLP codec, and the state-change generator Gen.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	mrand "math/rand"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/holiman/uint256"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

func Addr(i int) hashkey.Hash { return hashkey.Keccak256([]byte(fmt.Sprintf("account-%d", i))) }

func Slot(i int) hashkey.Hash { return hashkey.Keccak256([]byte(fmt.Sprintf("slot-%d", i))) }

func Acc(nonce, balance uint64) trie.Account {
	a := trie.Account{Nonce: nonce}
	a.Balance.SetUint64(balance)
	return a
}

// Model is the expected state: account -> fields and non-zero slots.
type Model map[hashkey.Hash]*ModelAccount

type ModelAccount struct {
	Acc   trie.Account
	Slots map[hashkey.Hash]uint256.Int
}

func (m Model) Clone() Model {
	c := make(Model, len(m))
	for k, a := range m {
		c[k] = &ModelAccount{Acc: a.Acc, Slots: maps.Clone(a.Slots)}
	}
	return c
}

// PutAccount writes an account to fr and to the model.
func PutAccount(t testing.TB, fr *trie.Frame, m Model, addr hashkey.Hash, acc trie.Account) {
	t.Helper()
	if err := fr.UpdateAccount(addr, acc); err != nil {
		t.Fatalf("UpdateAccount(%v): %v", addr, err)
	}
	if a := m[addr]; a != nil {
		a.Acc = acc
	} else {
		m[addr] = &ModelAccount{Acc: acc, Slots: map[hashkey.Hash]uint256.Int{}}
	}
}

// Store writes a slot (0 deletes) to fr and to the model.
func PutSlot(t testing.TB, fr *trie.Frame, m Model, addr, slot hashkey.Hash, v uint64) {
	t.Helper()
	if err := fr.UpdateStorage(addr, slot, uint256.NewInt(v)); err != nil {
		t.Fatalf("UpdateStorage(%v, %v, %d): %v", addr, slot, v, err)
	}
	if v == 0 {
		delete(m[addr].Slots, slot)
	} else {
		m[addr].Slots[slot] = *uint256.NewInt(v)
	}
}

// DropAccount deletes an account from fr and from the model.
func DropAccount(t testing.TB, fr *trie.Frame, m Model, addr hashkey.Hash) {
	t.Helper()
	if err := fr.DeleteAccount(addr); err != nil {
		t.Fatalf("DeleteAccount(%v): %v", addr, err)
	}
	delete(m, addr)
}

// WriteModel writes the whole model into fr.
func WriteModel(t testing.TB, fr *trie.Frame, m Model) {
	t.Helper()
	for _, addr := range slices.SortedFunc(maps.Keys(m), CmpHash) {
		a := m[addr]
		if err := fr.UpdateAccount(addr, a.Acc); err != nil {
			t.Fatalf("UpdateAccount: %v", err)
		}
		for slot, v := range a.Slots {
			if err := fr.UpdateStorage(addr, slot, &v); err != nil {
				t.Fatalf("UpdateStorage: %v", err)
			}
		}
	}
}

func CmpHash(a, b hashkey.Hash) int { return slices.Compare(a[:], b[:]) }

// RebuildRoot is the root of a fresh database holding m in a single frame.
func RebuildRoot(t testing.TB, f vertex.Format, m Model) hashkey.Hash {
	t.Helper()
	db, err := trie.Open(trie.NewMemoryBackend(), &trie.Options{Format: f, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fr := db.Begin()
	WriteModel(t, fr, m)
	root, err := fr.StateRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// OracleRoot computes the state root of m with generic tries: the account trie
// maps addrHash to RLP[nonce, balance, storageRoot, codeHash], each storage trie
// maps slotHash to RLP(minimal big-endian value).
func OracleRoot(t testing.TB, m Model) hashkey.Hash {
	t.Helper()
	acct := trie.NewTrie()
	for addr, a := range m {
		if err := acct.Put(addr[:], AccountRLP(a.Acc, OracleStorageRoot(t, a.Slots))); err != nil {
			t.Fatal(err)
		}
	}
	return acct.Hash()
}

func OracleStorageRoot(t testing.TB, slots map[hashkey.Hash]uint256.Int) hashkey.Hash {
	t.Helper()
	st := trie.NewTrie()
	for slot, v := range slots {
		if err := st.Put(slot[:], RLPString(v.Bytes())); err != nil {
			t.Fatal(err)
		}
	}
	return st.Hash()
}

// CheckRoot asserts that fr's root is the root of m, computed both ways.
func CheckRoot(t testing.TB, fr *trie.Frame, f vertex.Format, m Model, what string) hashkey.Hash {
	t.Helper()
	got, err := fr.StateRoot()
	if err != nil {
		t.Fatalf("%s: StateRoot: %v", what, err)
	}
	if err := fr.Check(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if want := RebuildRoot(t, f, m); got != want {
		t.Fatalf("%s: StateRoot = %v, a fresh single-frame rebuild gives %v", what, got, want)
	}
	if want := OracleRoot(t, m); got != want {
		t.Fatalf("%s: StateRoot = %v, the generic-trie oracle gives %v", what, got, want)
	}
	return got
}

// CheckState asserts that fr reads every account and slot of m, and that
// accounts in absent read as absent.
func CheckState(t testing.TB, fr *trie.Frame, m Model, absent ...hashkey.Hash) {
	t.Helper()
	for addr, a := range m {
		got, ok, err := fr.Account(addr)
		if err != nil || !ok {
			t.Fatalf("Account(%v) = _, %v, %v; want present", addr, ok, err)
		}
		want := a.Acc
		if want.CodeHash == (hashkey.Hash{}) {
			want.CodeHash = hashkey.EmptyCodeHash
		}
		if got != want {
			t.Fatalf("Account(%v) = %+v, want %+v", addr, got, want)
		}
		for slot, v := range a.Slots {
			got, err := fr.Storage(addr, slot)
			if err != nil || got != v {
				t.Fatalf("Storage(%v, %v) = %v, %v; want %v", addr, slot, &got, err, &v)
			}
		}
		sr, err := fr.StorageRoot(addr)
		if err != nil {
			t.Fatal(err)
		}
		if want := OracleStorageRoot(t, a.Slots); sr != want {
			t.Fatalf("StorageRoot(%v) = %v, want %v (%d slots)", addr, sr, want, len(a.Slots))
		}
	}
	for _, addr := range absent {
		if _, ok, err := fr.Account(addr); ok || err != nil {
			t.Fatalf("Account(%v) = _, %v, %v; want absent", addr, ok, err)
		}
	}
}

// ExpectErr asserts that every read (reads true) and every write of fr fails
// with want.
func ExpectErr(t testing.TB, fr *trie.Frame, want error, reads bool, what string) {
	t.Helper()
	a, s := Addr(0), Slot(0)
	check := func(op string, err error) {
		t.Helper()
		if !errors.Is(err, want) {
			t.Errorf("%s: %s = %v, want %v", what, op, err, want)
		}
	}
	if reads {
		_, _, err := fr.Account(a)
		check("Account", err)
		_, err = fr.Storage(a, s)
		check("Storage", err)
		_, err = fr.StateRoot()
		check("StateRoot", err)
		_, err = fr.StorageRoot(a)
		check("StorageRoot", err)
		_, err = fr.AccountProof(a)
		check("AccountProof", err)
		_, err = fr.StorageProof(a, s)
		check("StorageProof", err)
	}
	check("UpdateAccount", fr.UpdateAccount(a, Acc(1, 1)))
	check("UpdateStorage", fr.UpdateStorage(a, s, uint256.NewInt(1)))
	check("DeleteAccount", fr.DeleteAccount(a))
}

// Genesis builds n accounts (every 5th with 1..8 slots) in a frame, persists it
// at block 1 and returns the model.
func Genesis(t testing.TB, db *trie.DB, n int) Model {
	t.Helper()
	m := Model{}
	fr := db.Begin()
	for i := 0; i < n; i++ {
		PutAccount(t, fr, m, Addr(i), Acc(uint64(i), uint64(1000+i)))
		if i%5 == 0 {
			for s := 0; s <= i%8; s++ {
				PutSlot(t, fr, m, Addr(i), Slot(s), uint64(i*100+s+1))
			}
		}
	}
	if err := db.Persist(fr, 1); err != nil {
		t.Fatalf("Persist genesis: %v", err)
	}
	return m
}

// RLPString is the RLP of byte string b (written here, independently of
// package hashkey, for the references the tests compare against).
func RLPString(b []byte) []byte {
	if len(b) == 1 && b[0] < 0x80 {
		return []byte{b[0]}
	}
	return append(RLPHeader(0x80, len(b)), b...)
}

func RLPList(items ...[]byte) []byte {
	n := 0
	for _, it := range items {
		n += len(it)
	}
	out := RLPHeader(0xc0, n)
	for _, it := range items {
		out = append(out, it...)
	}
	return out
}

func RLPHeader(base byte, n int) []byte {
	if n < 56 {
		return []byte{base + byte(n)}
	}
	var be [8]byte
	binary.BigEndian.PutUint64(be[:], uint64(n))
	l := be[:]
	for len(l) > 0 && l[0] == 0 {
		l = l[1:]
	}
	return append([]byte{base + 55 + byte(len(l))}, l...)
}

func RLPUint(u uint64) []byte {
	var be [8]byte
	binary.BigEndian.PutUint64(be[:], u)
	b := be[:]
	for len(b) > 0 && b[0] == 0 {
		b = b[1:]
	}
	return RLPString(b)
}

// AccountRLP is RLP[nonce, balance, storageRoot, codeHash] (a zero code hash
// meaning no code).
func AccountRLP(a trie.Account, storageRoot hashkey.Hash) []byte {
	code := a.CodeHash
	if code == (hashkey.Hash{}) {
		code = hashkey.EmptyCodeHash
	}
	return RLPList(RLPUint(a.Nonce), RLPString(a.Balance.Bytes()), RLPString(storageRoot[:]), RLPString(code[:]))
}

var errRLP = errors.New("bad RLP")

// RLPSplit splits the first RLP item off b.
func RLPSplit(b []byte) (content []byte, list bool, rest []byte, err error) {
	if len(b) == 0 {
		return nil, false, nil, errRLP
	}
	h := b[0]
	var off, n int
	switch {
	case h < 0x80:
		return b[:1], false, b[1:], nil
	case h < 0xb8:
		off, n = 1, int(h-0x80)
	case h < 0xc0:
		ll := int(h - 0xb7)
		if len(b) < 1+ll {
			return nil, false, nil, errRLP
		}
		off, n = 1+ll, BigEndianInt(b[1:1+ll])
	case h < 0xf8:
		off, n, list = 1, int(h-0xc0), true
	default:
		ll := int(h - 0xf7)
		if len(b) < 1+ll {
			return nil, false, nil, errRLP
		}
		off, n, list = 1+ll, BigEndianInt(b[1:1+ll]), true
	}
	if n < 0 || len(b) < off+n {
		return nil, false, nil, errRLP
	}
	return b[off : off+n], list, b[off+n:], nil
}

func BigEndianInt(b []byte) int {
	n := 0
	for _, c := range b {
		n = n<<8 | int(c)
	}
	return n
}

// DecodeAccount decodes RLP[nonce, balance, storageRoot, codeHash].
func DecodeAccount(t testing.TB, b []byte) (nonce uint64, balance uint256.Int, storageRoot, codeHash hashkey.Hash) {
	t.Helper()
	payload, list, rest, err := RLPSplit(b)
	if err != nil || !list || len(rest) != 0 {
		t.Fatalf("account RLP %x: not a single list (%v)", b, err)
	}
	var items [][]byte
	for len(payload) > 0 {
		var it []byte
		if it, list, payload, err = RLPSplit(payload); err != nil || list {
			t.Fatalf("account RLP %x: bad item (%v)", b, err)
		}
		items = append(items, it)
	}
	if len(items) != 4 || len(items[0]) > 8 || len(items[1]) > 32 || len(items[2]) != 32 || len(items[3]) != 32 {
		t.Fatalf("account RLP %x: %d items", b, len(items))
	}
	for _, c := range items[0] {
		nonce = nonce<<8 | uint64(c)
	}
	balance.SetBytes(items[1])
	return nonce, balance, hashkey.Hash(items[2]), hashkey.Hash(items[3])
}

// ProofState builds a base of 300 accounts (persisted) and a frame on it with
// updates, a new account with 200 slots, a deleted account and deleted slots.
func ProofState(t *testing.T, db *trie.DB) (*trie.Frame, Model) {
	t.Helper()
	m := Genesis(t, db, 300)
	fr := db.Begin()
	for i := 0; i < 300; i += 11 {
		acc := Acc(uint64(i)*2, 1)
		acc.Balance.Lsh(uint256.NewInt(uint64(i)+1), 70) // balances over 64 bits
		PutAccount(t, fr, m, Addr(i), acc)
	}
	PutAccount(t, fr, m, Addr(1000), trie.Account{Nonce: 1, CodeHash: hashkey.Keccak256([]byte("code"))})
	for s := 0; s < 200; s++ {
		PutSlot(t, fr, m, Addr(1000), Slot(s), uint64(s)*uint64(s)+1)
	}
	PutSlot(t, fr, m, Addr(1000), Slot(7), 0)
	PutSlot(t, fr, m, Addr(10), Slot(0), 0)
	DropAccount(t, fr, m, Addr(20))
	if err := fr.Check(); err != nil { // keys void along the changed paths
		t.Fatal(err)
	}
	return fr, m
}

// Op is one state change; the same ops are applied to every database.
type Op struct {
	Kind  int // 0 update account, 1 delete account, 2 set slot (0 deletes)
	Addr  hashkey.Hash
	Acc   trie.Account
	Slot  hashkey.Hash
	Value uint64
}

func ApplyOps(t testing.TB, fr *trie.Frame, m Model, ops []Op) {
	t.Helper()
	if err := ApplyOpsErr(fr, m, ops); err != nil {
		t.Fatal(err)
	}
}

// ApplyOpsErr applies ops to fr and m (nil: no model); it is safe in any
// goroutine.
func ApplyOpsErr(fr *trie.Frame, m Model, ops []Op) error {
	for _, op := range ops {
		var err error
		switch op.Kind {
		case 0:
			if err = fr.UpdateAccount(op.Addr, op.Acc); err == nil && m != nil {
				if a := m[op.Addr]; a != nil {
					a.Acc = op.Acc
				} else {
					m[op.Addr] = &ModelAccount{Acc: op.Acc, Slots: map[hashkey.Hash]uint256.Int{}}
				}
			}
		case 1:
			if err = fr.DeleteAccount(op.Addr); err == nil && m != nil {
				delete(m, op.Addr)
			}
		case 2:
			if err = fr.UpdateStorage(op.Addr, op.Slot, uint256.NewInt(op.Value)); err == nil && m != nil {
				if op.Value == 0 {
					delete(m[op.Addr].Slots, op.Slot)
				} else {
					m[op.Addr].Slots[op.Slot] = *uint256.NewInt(op.Value)
				}
			}
		}
		if err != nil {
			return fmt.Errorf("op %+v: %w", op, err)
		}
	}
	return nil
}

// Gen generates blocks of random changes, keeping its own view of which
// accounts exist (so storage is only written to existing accounts).
type Gen struct {
	rng   *rand.Rand
	next  int         // next new account number
	live  []int       // existing accounts
	Slots map[int]int // account -> slot numbers used so far
}

// Fork returns a generator with its own seed that continues from g's accounts:
// it creates new accounts from g's next number plus offset and knows none of
// g's slots.
func (g *Gen) Fork(seed uint64, offset int) *Gen {
	kg := NewGen(seed)
	kg.next, kg.live = g.next+offset, append([]int(nil), g.live...)
	return kg
}

// NewGen returns a generator of state changes seeded with seed.
func NewGen(seed uint64) *Gen {
	return &Gen{rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)), Slots: map[int]int{}}
}

func (g *Gen) NewAccount(ops []Op) ([]Op, int) {
	i := g.next
	g.next++
	g.live = append(g.live, i)
	return append(ops, Op{Kind: 0, Addr: Addr(i), Acc: Acc(g.rng.Uint64N(100), g.rng.Uint64())}), i
}

func (g *Gen) SetSlot(ops []Op, i int, zeroFrac float64) []Op {
	s := g.rng.IntN(g.Slots[i] + 1)
	if s == g.Slots[i] {
		g.Slots[i]++
	}
	v := 1 + g.rng.Uint64N(1<<40)
	if g.rng.Float64() < zeroFrac {
		v = 0
	}
	return append(ops, Op{Kind: 2, Addr: Addr(i), Slot: Slot(s), Value: v})
}

// genesis: accounts accounts, withStorage of them with 1..30 slots.
func (g *Gen) Genesis(accounts, withStorage int) []Op {
	var ops []Op
	for k := 0; k < accounts; k++ {
		var i int
		ops, i = g.NewAccount(ops)
		if k < withStorage {
			for n := 1 + g.rng.IntN(30); n > 0; n-- {
				ops = g.SetSlot(ops, i, 0)
			}
		}
	}
	return ops
}

// block: n random changes (updates, creations, deletions, slot writes and
// slot deletions).
func (g *Gen) Block(n int) []Op {
	var ops []Op
	for len(ops) < n {
		r := g.rng.IntN(100)
		switch {
		case r < 10 || len(g.live) == 0:
			ops, _ = g.NewAccount(ops)
		case r < 14:
			k := g.rng.IntN(len(g.live))
			i := g.live[k]
			g.live[k] = g.live[len(g.live)-1]
			g.live = g.live[:len(g.live)-1]
			delete(g.Slots, i)
			ops = append(ops, Op{Kind: 1, Addr: Addr(i)})
		case r < 50:
			i := g.live[g.rng.IntN(len(g.live))]
			ops = append(ops, Op{Kind: 0, Addr: Addr(i), Acc: Acc(g.rng.Uint64N(1000), g.rng.Uint64())})
		default:
			ops = g.SetSlot(ops, g.live[g.rng.IntN(len(g.live))], 0.2)
		}
	}
	return ops
}

// Sizes are smaller under -short.
func Sizes() (accounts, withStorage, blocks, perBlock int) {
	if testing.Short() {
		return 1000, 100, 4, 400
	}
	return 3000, 300, 8, 600
}

// SameRoot fails unless the serially and the parallel hashed frames have the
// same state root.
func SameRoot(t *testing.T, ts, tp *trie.Frame, what string) {
	t.Helper()
	rs, err := ts.StateRoot()
	if err != nil {
		t.Fatal(err)
	}
	rp, err := tp.StateRoot()
	if err != nil {
		t.Fatal(err)
	}
	if rs != rp {
		t.Fatalf("%s: serial root %v, parallel root %v", what, rs, rp)
	}
}

// trietest.RandomAccountLeaves returns n accounts with random address hashes, sorted,
// every storageEvery-th with 1..maxSlots random slots (sorted).
func RandomAccountLeaves(rng *mrand.Rand, n, storageEvery, maxSlots int) []trie.AccountLeaf {
	accs := make([]trie.AccountLeaf, n)
	for i := range accs {
		a := &accs[i]
		rng.Read(a.AddrHash[:])
		a.Account.Nonce = uint64(rng.Intn(5))
		a.Account.Balance.SetUint64(rng.Uint64())
		if i%storageEvery == 0 {
			for j := 0; j < 1+rng.Intn(maxSlots); j++ {
				var s trie.SlotLeaf
				rng.Read(s.Hash[:])
				s.Value.SetUint64(1 + uint64(rng.Intn(1000)))
				a.Storage = append(a.Storage, s)
			}
			sort.Slice(a.Storage, func(i, j int) bool { return bytes.Compare(a.Storage[i].Hash[:], a.Storage[j].Hash[:]) < 0 })
		}
	}
	sort.Slice(accs, func(i, j int) bool { return bytes.Compare(accs[i].AddrHash[:], accs[j].AddrHash[:]) < 0 })
	return accs
}
