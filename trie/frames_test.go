package trie_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/holiman/uint256"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/rocks"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// This file tests the frame model: reads falling through frames to the persisted
// base, forks, Persist abandoning forks (ErrStale), Rollback, sealing (ErrSealed),
// reopening, and account deletion taking the account's storage with it. Every
// root is checked against two references built independently of the frame tree:
// a fresh single-frame database holding the same state (fxRebuildRoot) and the
// generic trie fed the RLP of the accounts and slots (fxOracleRoot).
//
// The fx* helpers below are shared by frames_test.go, parallel_test.go,
// state_test.go and example_test.go.

var fxFormats = []vertex.Format{vertex.FormatV1, vertex.FormatV2}

// fxStore is a backend that can be reopened: the memory backend keeps its
// records across Close (it is returned again as is), RocksDB reopens its dir.
type fxStore struct {
	name string
	dir  string
	mem  trie.Backend
}

func fxStores(t *testing.T) []*fxStore {
	return []*fxStore{
		{name: "memory", mem: trie.NewMemoryBackend()},
		{name: "rocksdb", dir: t.TempDir()},
	}
}

func (s *fxStore) backend(t *testing.T) trie.Backend {
	t.Helper()
	if s.mem != nil {
		return s.mem
	}
	b, err := rocks.Open(s.dir, &rocks.Options{BlockCacheBytes: 8 << 20, WriteBufferBytes: 4 << 20, BackgroundJobs: 2})
	if err != nil {
		t.Fatalf("rocks.Open(%s): %v", s.dir, err)
	}
	return b
}

// open opens a DB on the store; Cleanup closes it (Close is idempotent).
func (s *fxStore) open(t *testing.T, f vertex.Format, workers int) *trie.DB {
	t.Helper()
	b := s.backend(t)
	db, err := trie.Open(b, &trie.Options{Format: f, Workers: workers})
	if err != nil {
		b.Close()
		t.Fatalf("%s: trie.Open: %v", s.name, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// reopen closes db and opens the store again, as a restarted client would.
func (s *fxStore) reopen(t *testing.T, db *trie.DB, f vertex.Format) *trie.DB {
	t.Helper()
	if err := db.Close(); err != nil {
		t.Fatalf("%s: Close: %v", s.name, err)
	}
	return s.open(t, f, 0)
}

// fxEach runs fn for both formats on both backends.
func fxEach(t *testing.T, fn func(t *testing.T, f vertex.Format, st *fxStore)) {
	for _, f := range fxFormats {
		for _, st := range fxStores(t) {
			t.Run(fmt.Sprintf("%v/%s", f, st.name), func(t *testing.T) { fn(t, f, st) })
		}
	}
}

// fxEachMem runs fn for both formats on the memory backend.
func fxEachMem(t *testing.T, fn func(t *testing.T, f vertex.Format)) {
	for _, f := range fxFormats {
		t.Run(f.String(), func(t *testing.T) { fn(t, f) })
	}
}

func fxAddr(i int) hashkey.Hash { return hashkey.Keccak256([]byte(fmt.Sprintf("account-%d", i))) }
func fxSlot(i int) hashkey.Hash { return hashkey.Keccak256([]byte(fmt.Sprintf("slot-%d", i))) }

func fxAcc(nonce, balance uint64) trie.Account {
	a := trie.Account{Nonce: nonce}
	a.Balance.SetUint64(balance)
	return a
}

// fxModel is the expected state: account -> fields and non-zero slots.
type fxModel map[hashkey.Hash]*fxAccount

type fxAccount struct {
	acc   trie.Account
	slots map[hashkey.Hash]uint256.Int
}

func (m fxModel) clone() fxModel {
	c := make(fxModel, len(m))
	for k, a := range m {
		c[k] = &fxAccount{acc: a.acc, slots: maps.Clone(a.slots)}
	}
	return c
}

// fxUpdate writes an account to fr and to the model.
func fxUpdate(t testing.TB, fr *trie.Frame, m fxModel, addr hashkey.Hash, acc trie.Account) {
	t.Helper()
	if err := fr.UpdateAccount(addr, acc); err != nil {
		t.Fatalf("UpdateAccount(%v): %v", addr, err)
	}
	if a := m[addr]; a != nil {
		a.acc = acc
	} else {
		m[addr] = &fxAccount{acc: acc, slots: map[hashkey.Hash]uint256.Int{}}
	}
}

// fxStore writes a slot (0 deletes) to fr and to the model.
func fxSet(t testing.TB, fr *trie.Frame, m fxModel, addr, slot hashkey.Hash, v uint64) {
	t.Helper()
	if err := fr.UpdateStorage(addr, slot, uint256.NewInt(v)); err != nil {
		t.Fatalf("UpdateStorage(%v, %v, %d): %v", addr, slot, v, err)
	}
	if v == 0 {
		delete(m[addr].slots, slot)
	} else {
		m[addr].slots[slot] = *uint256.NewInt(v)
	}
}

// fxDelete deletes an account from fr and from the model.
func fxDelete(t testing.TB, fr *trie.Frame, m fxModel, addr hashkey.Hash) {
	t.Helper()
	if err := fr.DeleteAccount(addr); err != nil {
		t.Fatalf("DeleteAccount(%v): %v", addr, err)
	}
	delete(m, addr)
}

// fxWrite writes the whole model into fr.
func fxWrite(t testing.TB, fr *trie.Frame, m fxModel) {
	t.Helper()
	for _, addr := range slices.SortedFunc(maps.Keys(m), fxCmp) {
		a := m[addr]
		if err := fr.UpdateAccount(addr, a.acc); err != nil {
			t.Fatalf("UpdateAccount: %v", err)
		}
		for slot, v := range a.slots {
			if err := fr.UpdateStorage(addr, slot, &v); err != nil {
				t.Fatalf("UpdateStorage: %v", err)
			}
		}
	}
}

func fxCmp(a, b hashkey.Hash) int { return slices.Compare(a[:], b[:]) }

// fxRebuildRoot is the root of a fresh database holding m in a single frame.
func fxRebuildRoot(t testing.TB, f vertex.Format, m fxModel) hashkey.Hash {
	t.Helper()
	db, err := trie.Open(trie.NewMemoryBackend(), &trie.Options{Format: f, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fr := db.Begin()
	fxWrite(t, fr, m)
	root, err := fr.StateRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// fxOracleRoot computes the state root of m with generic tries: the account trie
// maps addrHash to RLP[nonce, balance, storageRoot, codeHash], each storage trie
// maps slotHash to RLP(minimal big-endian value).
func fxOracleRoot(t testing.TB, m fxModel) hashkey.Hash {
	t.Helper()
	acct := trie.NewTrie()
	for addr, a := range m {
		if err := acct.Put(addr[:], fxAccountRLP(a.acc, fxOracleStorageRoot(t, a.slots))); err != nil {
			t.Fatal(err)
		}
	}
	return acct.Hash()
}

func fxOracleStorageRoot(t testing.TB, slots map[hashkey.Hash]uint256.Int) hashkey.Hash {
	t.Helper()
	st := trie.NewTrie()
	for slot, v := range slots {
		if err := st.Put(slot[:], fxRLPString(v.Bytes())); err != nil {
			t.Fatal(err)
		}
	}
	return st.Hash()
}

// fxCheckRoot asserts that fr's root is the root of m, computed both ways.
func fxCheckRoot(t testing.TB, fr *trie.Frame, f vertex.Format, m fxModel, what string) hashkey.Hash {
	t.Helper()
	got, err := fr.StateRoot()
	if err != nil {
		t.Fatalf("%s: StateRoot: %v", what, err)
	}
	if err := trie.CheckInvariants(fr); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if want := fxRebuildRoot(t, f, m); got != want {
		t.Fatalf("%s: StateRoot = %v, a fresh single-frame rebuild gives %v", what, got, want)
	}
	if want := fxOracleRoot(t, m); got != want {
		t.Fatalf("%s: StateRoot = %v, the generic-trie oracle gives %v", what, got, want)
	}
	return got
}

// fxCheckState asserts that fr reads every account and slot of m, and that
// accounts in absent read as absent.
func fxCheckState(t testing.TB, fr *trie.Frame, m fxModel, absent ...hashkey.Hash) {
	t.Helper()
	for addr, a := range m {
		got, ok, err := fr.Account(addr)
		if err != nil || !ok {
			t.Fatalf("Account(%v) = _, %v, %v; want present", addr, ok, err)
		}
		want := a.acc
		if want.CodeHash == (hashkey.Hash{}) {
			want.CodeHash = hashkey.EmptyCodeHash
		}
		if got != want {
			t.Fatalf("Account(%v) = %+v, want %+v", addr, got, want)
		}
		for slot, v := range a.slots {
			got, err := fr.Storage(addr, slot)
			if err != nil || got != v {
				t.Fatalf("Storage(%v, %v) = %v, %v; want %v", addr, slot, &got, err, &v)
			}
		}
		sr, err := fr.StorageRoot(addr)
		if err != nil {
			t.Fatal(err)
		}
		if want := fxOracleStorageRoot(t, a.slots); sr != want {
			t.Fatalf("StorageRoot(%v) = %v, want %v (%d slots)", addr, sr, want, len(a.slots))
		}
	}
	for _, addr := range absent {
		if _, ok, err := fr.Account(addr); ok || err != nil {
			t.Fatalf("Account(%v) = _, %v, %v; want absent", addr, ok, err)
		}
	}
}

// fxExpectErr asserts that every read (reads true) and every write of fr fails
// with want.
func fxExpectErr(t testing.TB, fr *trie.Frame, want error, reads bool, what string) {
	t.Helper()
	a, s := fxAddr(0), fxSlot(0)
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
	check("UpdateAccount", fr.UpdateAccount(a, fxAcc(1, 1)))
	check("UpdateStorage", fr.UpdateStorage(a, s, uint256.NewInt(1)))
	check("DeleteAccount", fr.DeleteAccount(a))
}

// fxGenesis builds n accounts (every 5th with 1..8 slots) in a frame, persists it
// at block 1 and returns the model.
func fxGenesis(t testing.TB, db *trie.DB, n int) fxModel {
	t.Helper()
	m := fxModel{}
	fr := db.Begin()
	for i := 0; i < n; i++ {
		fxUpdate(t, fr, m, fxAddr(i), fxAcc(uint64(i), uint64(1000+i)))
		if i%5 == 0 {
			for s := 0; s <= i%8; s++ {
				fxSet(t, fr, m, fxAddr(i), fxSlot(s), uint64(i*100+s+1))
			}
		}
	}
	if err := db.Persist(fr, 1); err != nil {
		t.Fatalf("Persist genesis: %v", err)
	}
	return m
}

// TestFramesReadFallThrough: a frame reads its own writes, then its parent's,
// then the persisted base; a parent does not see its child's writes; a new frame
// on the base sees only the base.
func TestFramesReadFallThrough(t *testing.T) {
	fxEach(t, func(t *testing.T, f vertex.Format, st *fxStore) {
		db := st.open(t, f, 0)
		a, b, c := fxAddr(1), fxAddr(2), fxAddr(3)
		s1, s2 := fxSlot(1), fxSlot(2)

		m0 := fxModel{}
		g := db.Begin()
		fxUpdate(t, g, m0, a, fxAcc(1, 10))
		fxSet(t, g, m0, a, s1, 11)
		fxSet(t, g, m0, a, s2, 12)
		fxUpdate(t, g, m0, b, fxAcc(2, 20))
		root0 := fxCheckRoot(t, g, f, m0, "genesis")
		if err := db.Persist(g, 1); err != nil {
			t.Fatal(err)
		}

		m1 := m0.clone()
		f1 := db.Begin()
		fxUpdate(t, f1, m1, b, fxAcc(20, 200))
		fxUpdate(t, f1, m1, c, fxAcc(3, 30))
		fxSet(t, f1, m1, a, s1, 111)

		m2 := m1.clone()
		f2 := f1.Begin()
		fxUpdate(t, f2, m2, c, fxAcc(30, 300))
		fxSet(t, f2, m2, c, s1, 5)
		fxSet(t, f2, m2, a, s2, 0)

		// f2 sees base (a's nonce), f1 (b, a.s1) and itself (c, a.s2 deleted).
		fxCheckState(t, f2, m2)
		if v, _ := f2.Storage(a, s2); !v.IsZero() {
			t.Fatalf("f2: deleted slot reads %v", &v)
		}
		// f1 sees neither of f2's writes.
		fxCheckState(t, f1, m1)
		if v, _ := f1.Storage(c, s1); !v.IsZero() {
			t.Fatalf("f1 sees its child's slot: %v", &v)
		}
		// A new frame on the base sees the base only.
		f0 := db.Begin()
		fxCheckState(t, f0, m0, c)

		fxCheckRoot(t, f2, f, m2, "f2")
		fxCheckRoot(t, f1, f, m1, "f1")
		if got := fxCheckRoot(t, f0, f, m0, "f0"); got != root0 {
			t.Fatalf("base frame root %v, persisted %v", got, root0)
		}
		if got, _ := db.StateRoot(); got != root0 {
			t.Fatalf("DB.StateRoot = %v, want %v", got, root0)
		}
	})
}

// TestFramesForks: two children of one frame keep separate states and roots;
// persisting one abandons the other and its descendants (ErrStale on reads and
// writes) while descendants of the persisted frame carry on; a reopened DB has
// the persisted root and block.
func TestFramesForks(t *testing.T) {
	fxEach(t, func(t *testing.T, f vertex.Format, st *fxStore) {
		db := st.open(t, f, 0)
		m0 := fxGenesis(t, db, 200)

		p := db.Begin()
		mp := m0.clone()
		for i := 0; i < 200; i += 7 {
			fxUpdate(t, p, mp, fxAddr(i), fxAcc(uint64(i)+1, 7))
		}
		fxSet(t, p, mp, fxAddr(0), fxSlot(0), 42)
		rootP := fxCheckRoot(t, p, f, mp, "p")

		// Two forks of p changing the same accounts differently; both create a new
		// account with storage (taking the same fresh IDs for different vertices).
		x, y := p.Begin(), p.Begin()
		mx, my := mp.clone(), mp.clone()
		for i := 0; i < 200; i += 3 {
			fxUpdate(t, x, mx, fxAddr(i), fxAcc(1, uint64(i)))
			fxUpdate(t, y, my, fxAddr(i), fxAcc(2, uint64(i)))
		}
		fxUpdate(t, x, mx, fxAddr(1000), fxAcc(1, 1))
		fxUpdate(t, y, my, fxAddr(2000), fxAcc(2, 2))
		for s := 0; s < 20; s++ {
			fxSet(t, x, mx, fxAddr(1000), fxSlot(s), uint64(s+1))
			fxSet(t, y, my, fxAddr(2000), fxSlot(s), uint64(s+100))
		}
		fxSet(t, x, mx, fxAddr(0), fxSlot(0), 0)
		fxDelete(t, y, my, fxAddr(5))

		rootX := fxCheckRoot(t, x, f, mx, "fork x")
		rootY := fxCheckRoot(t, y, f, my, "fork y")
		if rootX == rootY {
			t.Fatal("forks with different changes have the same root")
		}
		if got := fxCheckRoot(t, p, f, mp, "p after its children wrote"); got != rootP {
			t.Fatalf("p's root changed from %v to %v", rootP, got)
		}
		fxCheckState(t, x, mx, fxAddr(2000))
		fxCheckState(t, y, my, fxAddr(1000), fxAddr(5))

		x2, y2 := x.Begin(), y.Begin()
		mx2, my2 := mx.clone(), my.clone()
		fxUpdate(t, x2, mx2, fxAddr(3000), fxAcc(3, 3))
		fxUpdate(t, y2, my2, fxAddr(4000), fxAcc(4, 4))
		fxSet(t, y2, my2, fxAddr(2000), fxSlot(0), 0)
		fxCheckRoot(t, x2, f, mx2, "x2")
		fxCheckRoot(t, y2, f, my2, "y2")

		// Persisting the common parent keeps both forks alive.
		if err := db.Persist(p, 2); err != nil {
			t.Fatal(err)
		}
		fxCheckState(t, x, mx)
		fxCheckState(t, y2, my2)
		fxCheckRoot(t, x2, f, mx2, "x2 after p persisted")

		// Persisting y abandons x and x2.
		if err := db.Persist(y, 3); err != nil {
			t.Fatal(err)
		}
		fxExpectErr(t, x, trie.ErrStale, true, "abandoned fork x")
		fxExpectErr(t, x2, trie.ErrStale, true, "child x2 of abandoned fork")
		fxExpectErr(t, x2.Begin(), trie.ErrStale, true, "frame begun on x2 after abandonment")
		fxExpectErr(t, p, trie.ErrStale, true, "p, below the new base")
		for _, fr := range []*trie.Frame{x, x2, p} {
			if err := db.Persist(fr, 4); !errors.Is(err, trie.ErrStale) {
				t.Fatalf("Persist of a stale frame = %v, want ErrStale", err)
			}
		}
		if got, _ := db.StateRoot(); got != rootY || db.Block() != 3 {
			t.Fatalf("after Persist(y, 3): root %v block %d, want %v 3", got, db.Block(), rootY)
		}

		// y (persisted, sealed) is still readable; y2 carries on and can still write.
		fxCheckState(t, y, my)
		fxCheckState(t, y2, my2)
		fxUpdate(t, y2, my2, fxAddr(5000), fxAcc(5, 5))
		fxSet(t, y2, my2, fxAddr(5000), fxSlot(9), 99)
		rootY2 := fxCheckRoot(t, y2, f, my2, "y2 after y persisted")
		if err := db.Persist(y2, 4); err != nil {
			t.Fatal(err)
		}

		db = st.reopen(t, db, f)
		if got, err := db.StateRoot(); err != nil || got != rootY2 || db.Block() != 4 {
			t.Fatalf("reopened: root %v (%v) block %d, want %v 4", got, err, db.Block(), rootY2)
		}
		fr := db.Begin()
		fxCheckState(t, fr, my2, fxAddr(1000), fxAddr(3000), fxAddr(5))
		fxCheckRoot(t, fr, f, my2, "reopened")
	})
}

// TestFramesRollback: Rollback drops a frame; its descendants turn stale, its
// siblings and parent are unaffected.
func TestFramesRollback(t *testing.T) {
	fxEach(t, func(t *testing.T, f vertex.Format, st *fxStore) {
		db := st.open(t, f, 0)
		m0 := fxGenesis(t, db, 100)

		p := db.Begin()
		mp := m0.clone()
		fxUpdate(t, p, mp, fxAddr(1), fxAcc(99, 99))
		x, y := p.Begin(), p.Begin()
		mx, my := mp.clone(), mp.clone()
		fxSet(t, x, mx, fxAddr(1), fxSlot(1), 1)
		fxSet(t, y, my, fxAddr(1), fxSlot(1), 2)
		x2 := x.Begin()
		rootY := fxCheckRoot(t, y, f, my, "y")
		rootP := fxCheckRoot(t, p, f, mp, "p")

		x.Rollback()
		fxExpectErr(t, x, trie.ErrStale, true, "rolled-back x")
		fxExpectErr(t, x2, trie.ErrStale, true, "child of rolled-back x")
		x.Rollback() // a second Rollback is harmless
		if err := db.Persist(x2, 2); !errors.Is(err, trie.ErrStale) {
			t.Fatalf("Persist(child of rolled-back frame) = %v, want ErrStale", err)
		}

		fxCheckState(t, y, my)
		if got := fxCheckRoot(t, y, f, my, "sibling y"); got != rootY {
			t.Fatalf("sibling root changed: %v -> %v", rootY, got)
		}
		if got := fxCheckRoot(t, p, f, mp, "parent p"); got != rootP {
			t.Fatalf("parent root changed: %v -> %v", rootP, got)
		}
		// p stays sealed: it had children, even if one was rolled back.
		fxExpectErr(t, p, trie.ErrSealed, false, "parent of rolled-back frame")

		// Rolling back p turns y stale too.
		p.Rollback()
		fxExpectErr(t, y, trie.ErrStale, true, "child of rolled-back p")
		if got, _ := db.StateRoot(); got != fxRebuildRoot(t, f, m0) || db.Block() != 1 {
			t.Fatalf("rollbacks changed the persisted state: %v block %d", got, db.Block())
		}

		// A rolled-back leaf frame: the next frame starts from the base again.
		z := db.Begin()
		fxUpdate(t, z, m0.clone(), fxAddr(1), fxAcc(5, 5))
		z.Rollback()
		fxExpectErr(t, z, trie.ErrStale, true, "rolled-back leaf frame")
		n := db.Begin()
		fxCheckState(t, n, m0)
		mn := m0.clone()
		fxUpdate(t, n, mn, fxAddr(7), fxAcc(7, 7))
		if err := db.Persist(n, 2); err != nil {
			t.Fatal(err)
		}
		// Rollback of the persisted base is ignored.
		n.Rollback()
		fxCheckState(t, n, mn)
		db = st.reopen(t, db, f)
		fxCheckRoot(t, db.Begin(), f, mn, "reopened after rollbacks")
	})
}

// TestFramesSealed: a frame with a child, or persisted, refuses writes with
// ErrSealed but still reads; its children write.
func TestFramesSealed(t *testing.T) {
	fxEachMem(t, func(t *testing.T, f vertex.Format) {
		db := (&fxStore{name: "memory", mem: trie.NewMemoryBackend()}).open(t, f, 0)
		m := fxModel{}
		p := db.Begin()
		fxUpdate(t, p, m, fxAddr(0), fxAcc(1, 1))
		fxSet(t, p, m, fxAddr(0), fxSlot(0), 1)
		c := p.Begin()
		fxExpectErr(t, p, trie.ErrSealed, false, "frame with a child")
		fxCheckState(t, p, m)
		fxCheckRoot(t, p, f, m, "sealed p")

		mc := m.clone()
		fxUpdate(t, c, mc, fxAddr(1), fxAcc(2, 2))
		if err := db.Persist(c, 1); err != nil {
			t.Fatal(err)
		}
		fxExpectErr(t, c, trie.ErrSealed, false, "persisted frame")
		fxCheckState(t, c, mc)
		d := c.Begin()
		fxUpdate(t, d, mc, fxAddr(2), fxAcc(3, 3))
		fxCheckRoot(t, d, f, mc, "child of persisted frame")
	})
}

// TestFramesPersistTwice: persisting the frame that already is the base (a
// retried Persist) must not panic or break the DB.
func TestFramesPersistTwice(t *testing.T) {
	fxEachMem(t, func(t *testing.T, f vertex.Format) {
		db := (&fxStore{name: "memory", mem: trie.NewMemoryBackend()}).open(t, f, 0)
		m := fxModel{}
		fr := db.Begin()
		fxUpdate(t, fr, m, fxAddr(0), fxAcc(1, 1))
		if err := db.Persist(fr, 1); err != nil {
			t.Fatal(err)
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("second Persist of the same frame panicked: %v", r)
				}
			}()
			if err := db.Persist(fr, 1); err != nil {
				t.Fatalf("second Persist(fr, 1) = %v, want nil (no-op)", err)
			}
			if err := db.Persist(fr, 5); err == nil {
				t.Fatal("Persist of the base under another block number succeeded")
			}
		}()
		if db.Block() != 1 {
			t.Fatalf("Block = %d after repeated Persist, want 1", db.Block())
		}
		fxCheckState(t, fr, m)
		n := db.Begin()
		fxCheckState(t, n, m)
		fxUpdate(t, n, m, fxAddr(1), fxAcc(2, 2))
		fxCheckRoot(t, n, f, m, "frame after a repeated Persist")
		if err := db.Persist(n, 2); err != nil {
			t.Fatal(err)
		}
		if db.Block() != 2 {
			t.Fatalf("Block = %d, want 2", db.Block())
		}
	})
}

// TestFramesClosed: everything answers ErrClosed after Close.
func TestFramesClosed(t *testing.T) {
	db := (&fxStore{name: "memory", mem: trie.NewMemoryBackend()}).open(t, vertex.FormatV2, 0)
	fr := db.Begin()
	fxUpdate(t, fr, fxModel{}, fxAddr(0), fxAcc(1, 1))
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	fxExpectErr(t, fr, trie.ErrClosed, true, "after Close")
	if _, err := db.StateRoot(); !errors.Is(err, trie.ErrClosed) {
		t.Fatalf("DB.StateRoot after Close = %v", err)
	}
	if err := db.Persist(fr, 1); !errors.Is(err, trie.ErrClosed) {
		t.Fatalf("Persist after Close = %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
}

// TestFramesNoAccount: UpdateStorage on an absent (or deleted) account fails
// with ErrNoAccount and changes nothing.
func TestFramesNoAccount(t *testing.T) {
	fxEachMem(t, func(t *testing.T, f vertex.Format) {
		db := (&fxStore{name: "memory", mem: trie.NewMemoryBackend()}).open(t, f, 0)
		m := fxGenesis(t, db, 20)
		fr := db.Begin()
		if err := fr.UpdateStorage(fxAddr(999), fxSlot(0), uint256.NewInt(1)); !errors.Is(err, trie.ErrNoAccount) {
			t.Fatalf("UpdateStorage(absent) = %v, want ErrNoAccount", err)
		}
		fxDelete(t, fr, m, fxAddr(3))
		if err := fr.UpdateStorage(fxAddr(3), fxSlot(0), uint256.NewInt(1)); !errors.Is(err, trie.ErrNoAccount) {
			t.Fatalf("UpdateStorage(deleted) = %v, want ErrNoAccount", err)
		}
		if err := fr.DeleteAccount(fxAddr(999)); err != nil {
			t.Fatalf("DeleteAccount(absent) = %v", err)
		}
		fxCheckState(t, fr, m, fxAddr(999), fxAddr(3))
		fxCheckRoot(t, fr, f, m, "after refused writes")
	})
}

// TestFramesDeleteAccountStorage: deleting an account deletes its storage; an
// account created again, in the same frame or a later one, starts empty.
func TestFramesDeleteAccountStorage(t *testing.T) {
	fxEach(t, func(t *testing.T, f vertex.Format, st *fxStore) {
		db := st.open(t, f, 0)
		m := fxGenesis(t, db, 50)
		a := fxAddr(10) // has slots 0..2 in the base
		if len(m[a].slots) == 0 {
			t.Fatal("test setup: account without storage")
		}
		old := slices.Collect(maps.Keys(m[a].slots))

		checkEmpty := func(fr *trie.Frame, a hashkey.Hash, old []hashkey.Hash, what string) {
			t.Helper()
			for _, s := range old {
				if v, err := fr.Storage(a, s); err != nil || !v.IsZero() {
					t.Fatalf("%s: old slot reads %v, %v; want 0", what, &v, err)
				}
			}
			if r, err := fr.StorageRoot(a); err != nil || r != hashkey.EmptyRoot {
				t.Fatalf("%s: StorageRoot = %v, %v; want EmptyRoot", what, r, err)
			}
		}

		// Same frame, storage in the base: delete and re-create.
		fr := db.Begin()
		fxDelete(t, fr, m, a)
		fxUpdate(t, fr, m, a, fxAcc(1, 1))
		checkEmpty(fr, a, old, "re-created in the same frame")
		fxCheckState(t, fr, m)
		fxCheckRoot(t, fr, f, m, "re-created in the same frame")
		fxSet(t, fr, m, a, fxSlot(77), 77)
		fxCheckRoot(t, fr, f, m, "re-created with a new slot")
		if err := db.Persist(fr, 2); err != nil {
			t.Fatal(err)
		}

		// Storage created and deleted within one frame.
		b := fxAddr(11)
		fr = db.Begin()
		for s := 0; s < 40; s++ {
			fxSet(t, fr, m, b, fxSlot(s), uint64(s+1))
		}
		fxDelete(t, fr, m, b)
		fxUpdate(t, fr, m, b, fxAcc(2, 2))
		if r, _ := fr.StorageRoot(b); r != hashkey.EmptyRoot {
			t.Fatalf("re-created account b: StorageRoot %v", r)
		}
		fxCheckRoot(t, fr, f, m, "storage created, deleted, re-created in one frame")

		// Deleted in a parent frame, re-created in the child.
		c := fxAddr(15)
		cOld := slices.Collect(maps.Keys(m[c].slots))
		fxDelete(t, fr, m, c)
		child := fr.Begin()
		fxUpdate(t, child, m, c, fxAcc(3, 3))
		checkEmpty(child, c, cOld, "re-created in a child frame")
		fxCheckRoot(t, child, f, m, "deleted in parent, re-created in child")
		if err := db.Persist(child, 3); err != nil {
			t.Fatal(err)
		}

		db = st.reopen(t, db, f)
		fr = db.Begin()
		checkEmpty(fr, c, cOld, "reopened")
		for _, s := range old {
			if v, err := fr.Storage(a, s); err != nil || !v.IsZero() {
				t.Fatalf("reopened: old slot of a reads %v, %v; want 0", &v, err)
			}
		}
		fxCheckState(t, fr, m)
		fxCheckRoot(t, fr, f, m, "reopened")
	})
}

// TestFramesStorageEmpties: when the last slot of a storage trie is deleted, the
// storage root becomes the empty root and the state root returns to that of the
// account without storage.
func TestFramesStorageEmpties(t *testing.T) {
	fxEach(t, func(t *testing.T, f vertex.Format, st *fxStore) {
		db := st.open(t, f, 0)
		m := fxModel{}
		a := fxAddr(1)
		fr := db.Begin()
		fxUpdate(t, fr, m, a, fxAcc(1, 1))
		fxUpdate(t, fr, m, fxAddr(2), fxAcc(2, 2))
		bare := fxCheckRoot(t, fr, f, m, "no storage")
		if err := db.Persist(fr, 1); err != nil {
			t.Fatal(err)
		}

		fr = db.Begin()
		fxSet(t, fr, m, a, fxSlot(1), 1)
		fxSet(t, fr, m, a, fxSlot(2), 2)
		r2, _ := fr.StorageRoot(a)
		full := fxCheckRoot(t, fr, f, m, "two slots")
		if r2 == hashkey.EmptyRoot || full == bare {
			t.Fatal("adding storage changed neither the storage root nor the state root")
		}
		if err := db.Persist(fr, 2); err != nil {
			t.Fatal(err)
		}

		fr = db.Begin()
		fxSet(t, fr, m, a, fxSlot(1), 0)
		r1, _ := fr.StorageRoot(a)
		one := fxCheckRoot(t, fr, f, m, "one slot left")
		if r1 == r2 || r1 == hashkey.EmptyRoot || one == full || one == bare {
			t.Fatalf("deleting one of two slots: storage root %v (was %v), state root %v", r1, r2, one)
		}
		fxCheckState(t, fr, m)
		// The last slot, deleted with a nil value.
		if err := fr.UpdateStorage(a, fxSlot(2), nil); err != nil {
			t.Fatal(err)
		}
		delete(m[a].slots, fxSlot(2))
		if r, _ := fr.StorageRoot(a); r != hashkey.EmptyRoot {
			t.Fatalf("emptied storage: StorageRoot %v, want EmptyRoot", r)
		}
		if got := fxCheckRoot(t, fr, f, m, "storage emptied"); got != bare {
			t.Fatalf("emptied storage: state root %v, want the storage-less root %v", got, bare)
		}
		// Deleting a slot of an account without storage is a no-op.
		if err := fr.UpdateStorage(a, fxSlot(3), uint256.NewInt(0)); err != nil {
			t.Fatal(err)
		}
		if err := db.Persist(fr, 3); err != nil {
			t.Fatal(err)
		}
		db = st.reopen(t, db, f)
		if got, _ := db.StateRoot(); got != bare {
			t.Fatalf("reopened: root %v, want %v", got, bare)
		}
		fr = db.Begin()
		fxCheckState(t, fr, m)
		// Storage grows again from empty.
		fxSet(t, fr, m, a, fxSlot(2), 2)
		fxSet(t, fr, m, a, fxSlot(1), 1)
		if got := fxCheckRoot(t, fr, f, m, "storage re-grown"); got != full {
			t.Fatalf("re-grown storage: root %v, want %v", got, full)
		}
	})
}
