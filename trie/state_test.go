package trie_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/holiman/uint256"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// This file tests the EIP-1186 proofs of the state API (account proofs against
// the state root, storage proofs against the account's storage root, for present
// and absent keys, and their rejection once tampered with) and the account and
// storage iterators.

// fxRLPString is the RLP of byte string b (written here, independently of
// package hashkey, for the references the tests compare against).
func fxRLPString(b []byte) []byte {
	if len(b) == 1 && b[0] < 0x80 {
		return []byte{b[0]}
	}
	return append(fxRLPHeader(0x80, len(b)), b...)
}

func fxRLPList(items ...[]byte) []byte {
	n := 0
	for _, it := range items {
		n += len(it)
	}
	out := fxRLPHeader(0xc0, n)
	for _, it := range items {
		out = append(out, it...)
	}
	return out
}

func fxRLPHeader(base byte, n int) []byte {
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

func fxRLPUint(u uint64) []byte {
	var be [8]byte
	binary.BigEndian.PutUint64(be[:], u)
	b := be[:]
	for len(b) > 0 && b[0] == 0 {
		b = b[1:]
	}
	return fxRLPString(b)
}

// fxAccountRLP is RLP[nonce, balance, storageRoot, codeHash] (a zero code hash
// meaning no code).
func fxAccountRLP(a trie.Account, storageRoot hashkey.Hash) []byte {
	code := a.CodeHash
	if code == (hashkey.Hash{}) {
		code = hashkey.EmptyCodeHash
	}
	return fxRLPList(fxRLPUint(a.Nonce), fxRLPString(a.Balance.Bytes()), fxRLPString(storageRoot[:]), fxRLPString(code[:]))
}

var errFxRLP = errors.New("bad RLP")

// fxRLPSplit splits the first RLP item off b.
func fxRLPSplit(b []byte) (content []byte, list bool, rest []byte, err error) {
	if len(b) == 0 {
		return nil, false, nil, errFxRLP
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
			return nil, false, nil, errFxRLP
		}
		off, n = 1+ll, fxBE(b[1:1+ll])
	case h < 0xf8:
		off, n, list = 1, int(h-0xc0), true
	default:
		ll := int(h - 0xf7)
		if len(b) < 1+ll {
			return nil, false, nil, errFxRLP
		}
		off, n, list = 1+ll, fxBE(b[1:1+ll]), true
	}
	if n < 0 || len(b) < off+n {
		return nil, false, nil, errFxRLP
	}
	return b[off : off+n], list, b[off+n:], nil
}

func fxBE(b []byte) int {
	n := 0
	for _, c := range b {
		n = n<<8 | int(c)
	}
	return n
}

// fxDecodeAccount decodes RLP[nonce, balance, storageRoot, codeHash].
func fxDecodeAccount(t testing.TB, b []byte) (nonce uint64, balance uint256.Int, storageRoot, codeHash hashkey.Hash) {
	t.Helper()
	payload, list, rest, err := fxRLPSplit(b)
	if err != nil || !list || len(rest) != 0 {
		t.Fatalf("account RLP %x: not a single list (%v)", b, err)
	}
	var items [][]byte
	for len(payload) > 0 {
		var it []byte
		if it, list, payload, err = fxRLPSplit(payload); err != nil || list {
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

// fxProofState builds a base of 300 accounts (persisted) and a frame on it with
// updates, a new account with 200 slots, a deleted account and deleted slots.
func fxProofState(t *testing.T, db *trie.DB) (*trie.Frame, fxModel) {
	t.Helper()
	m := fxGenesis(t, db, 300)
	fr := db.Begin()
	for i := 0; i < 300; i += 11 {
		acc := fxAcc(uint64(i)*2, 1)
		acc.Balance.Lsh(uint256.NewInt(uint64(i)+1), 70) // balances over 64 bits
		fxUpdate(t, fr, m, fxAddr(i), acc)
	}
	fxUpdate(t, fr, m, fxAddr(1000), trie.Account{Nonce: 1, CodeHash: hashkey.Keccak256([]byte("code"))})
	for s := 0; s < 200; s++ {
		fxSet(t, fr, m, fxAddr(1000), fxSlot(s), uint64(s)*uint64(s)+1)
	}
	fxSet(t, fr, m, fxAddr(1000), fxSlot(7), 0)
	fxSet(t, fr, m, fxAddr(10), fxSlot(0), 0)
	fxDelete(t, fr, m, fxAddr(20))
	if err := trie.CheckInvariants(fr); err != nil { // keys void along the changed paths
		t.Fatal(err)
	}
	return fr, m
}

// TestStateProofs: AccountProof verifies against StateRoot to the account's RLP
// (whose storage root is StorageRoot), StorageProof against StorageRoot to the
// slot's RLP; absent accounts and slots are proven absent (nil, nil).
func TestStateProofs(t *testing.T) {
	fxEach(t, func(t *testing.T, f vertex.Format, st *fxStore) {
		db := st.open(t, f, 0)
		fr, m := fxProofState(t, db)
		root := fxCheckRoot(t, fr, f, m, "proof state")
		absentSlots := []hashkey.Hash{fxSlot(7), fxSlot(5000), fxSlot(5001)}
		for _, addr := range slices.SortedFunc(maps.Keys(m), fxCmp) {
			a := m[addr]
			proof, err := fr.AccountProof(addr)
			if err != nil {
				t.Fatalf("AccountProof: %v", err)
			}
			val, err := trie.VerifyProof(root, addr[:], proof)
			if err != nil || val == nil {
				t.Fatalf("VerifyProof(account %v) = %x, %v", addr, val, err)
			}
			nonce, balance, sroot, code := fxDecodeAccount(t, val)
			want := a.acc
			if want.CodeHash == (hashkey.Hash{}) {
				want.CodeHash = hashkey.EmptyCodeHash
			}
			if nonce != want.Nonce || balance != want.Balance || code != want.CodeHash {
				t.Fatalf("account %v: proven [%d %v %v], want %+v", addr, nonce, &balance, code, want)
			}
			gotSR, err := fr.StorageRoot(addr)
			if err != nil || sroot != gotSR || sroot != fxOracleStorageRoot(t, a.slots) {
				t.Fatalf("account %v: proven storage root %v, StorageRoot %v (%v), oracle %v", addr, sroot, gotSR, err, fxOracleStorageRoot(t, a.slots))
			}
			if !bytes.Equal(val, fxAccountRLP(a.acc, sroot)) {
				t.Fatalf("account %v: proven value %x is not the canonical RLP %x", addr, val, fxAccountRLP(a.acc, sroot))
			}
			for slot, v := range a.slots {
				sp, err := fr.StorageProof(addr, slot)
				if err != nil {
					t.Fatal(err)
				}
				got, err := trie.VerifyProof(sroot, slot[:], sp)
				if err != nil || !bytes.Equal(got, fxRLPString(v.Bytes())) {
					t.Fatalf("slot %v of %v: proven %x, %v; want RLP of %v", slot, addr, got, err, &v)
				}
			}
			for _, slot := range absentSlots {
				if _, ok := a.slots[slot]; ok {
					continue
				}
				sp, err := fr.StorageProof(addr, slot)
				if err != nil {
					t.Fatal(err)
				}
				if len(a.slots) == 0 && len(sp) != 0 {
					t.Fatalf("account %v without storage: storage proof of %d nodes", addr, len(sp))
				}
				if got, err := trie.VerifyProof(sroot, slot[:], sp); got != nil || err != nil {
					t.Fatalf("absent slot %v of %v: proven %x, %v; want nil, nil", slot, addr, got, err)
				}
			}
		}
		for _, addr := range []hashkey.Hash{fxAddr(20), fxAddr(9999), fxAddr(10000), fxAddr(10001)} {
			proof, err := fr.AccountProof(addr)
			if err != nil {
				t.Fatal(err)
			}
			if val, err := trie.VerifyProof(root, addr[:], proof); val != nil || err != nil {
				t.Fatalf("absent account %v: proven %x, %v; want nil, nil", addr, val, err)
			}
			if sr, err := fr.StorageRoot(addr); sr != hashkey.EmptyRoot || err != nil {
				t.Fatalf("absent account %v: StorageRoot %v, %v", addr, sr, err)
			}
			sp, err := fr.StorageProof(addr, fxSlot(0))
			if err != nil || len(sp) != 0 {
				t.Fatalf("absent account %v: storage proof of %d nodes, %v", addr, len(sp), err)
			}
		}
		// A persisted state proves the same.
		if err := db.Persist(fr, 2); err != nil {
			t.Fatal(err)
		}
		fresh := db.Begin()
		p1, _ := fr.AccountProof(fxAddr(1000))
		p2, err := fresh.AccountProof(fxAddr(1000))
		if err != nil || len(p1) != len(p2) {
			t.Fatalf("proof after persist: %d nodes (%v), before %d", len(p2), err, len(p1))
		}
		for i := range p1 {
			if !bytes.Equal(p1[i], p2[i]) {
				t.Fatalf("proof node %d differs after persist", i)
			}
		}
	})
}

// TestStateProofsTampered: a proof with any node changed, a node missing, a
// wrong root or a different key does not prove the value.
func TestStateProofsTampered(t *testing.T) {
	fxEachMem(t, func(t *testing.T, f vertex.Format) {
		db := (&fxStore{name: "memory", mem: trie.NewMemoryBackend()}).open(t, f, 0)
		fr, m := fxProofState(t, db)
		root, err := fr.StateRoot()
		if err != nil {
			t.Fatal(err)
		}
		addr := fxAddr(1000)
		sroot, _ := fr.StorageRoot(addr)
		slot := fxSlot(3)
		cases := []struct {
			name  string
			root  hashkey.Hash
			key   []byte
			proof func() ([][]byte, error)
		}{
			{"account", root, addr[:], func() ([][]byte, error) { return fr.AccountProof(addr) }},
			{"slot", sroot, slot[:], func() ([][]byte, error) { return fr.StorageProof(addr, slot) }},
		}
		for _, c := range cases {
			proof, err := c.proof()
			if err != nil {
				t.Fatal(err)
			}
			want, err := trie.VerifyProof(c.root, c.key, proof)
			if err != nil || want == nil {
				t.Fatalf("%s: untampered proof: %x, %v", c.name, want, err)
			}
			if len(proof) < 2 {
				t.Fatalf("%s: proof of %d nodes is too short to test", c.name, len(proof))
			}
			bad := func(what string, p [][]byte, root hashkey.Hash, key []byte) {
				t.Helper()
				got, err := trie.VerifyProof(root, key, p)
				if err == nil && bytes.Equal(got, want) {
					t.Fatalf("%s: %s: still proves the value", c.name, what)
				}
				if err != nil && !errors.Is(err, trie.ErrBadProof) {
					t.Fatalf("%s: %s: error %v does not wrap ErrBadProof", c.name, what, err)
				}
			}
			for i := range proof {
				for _, pos := range []int{0, len(proof[i]) / 2, len(proof[i]) - 1} {
					p := slices.Clone(proof)
					p[i] = slices.Clone(proof[i])
					p[i][pos] ^= 0x01
					got, err := trie.VerifyProof(c.root, c.key, p)
					if !errors.Is(err, trie.ErrBadProof) {
						t.Fatalf("%s: node %d byte %d flipped: %x, %v; want ErrBadProof", c.name, i, pos, got, err)
					}
				}
				dropped := slices.Delete(slices.Clone(proof), i, i+1)
				if _, err := trie.VerifyProof(c.root, c.key, dropped); !errors.Is(err, trie.ErrBadProof) {
					t.Fatalf("%s: node %d dropped: %v; want ErrBadProof", c.name, i, err)
				}
			}
			bad("truncated", proof[:len(proof)-1], c.root, c.key)
			bad("wrong root", proof, hashkey.Keccak256([]byte("not the root")), c.key)
			other := hashkey.Keccak256(c.key)
			bad("another key", proof, c.root, other[:])
		}
		// A proof of the previous state does not verify against the new root.
		old, _ := fr.AccountProof(fxAddr(0))
		child := fr.Begin()
		fxUpdate(t, child, m, fxAddr(0), fxAcc(12345, 1))
		newRoot, _ := child.StateRoot()
		if got, err := trie.VerifyProof(newRoot, fxAddr(0).Bytes(), old); err == nil {
			t.Fatalf("an old proof verifies against the new root: %x", got)
		}
	})
}

// TestStateProofsSmall: the empty state, a single account (the root is a leaf)
// and a single slot.
func TestStateProofsSmall(t *testing.T) {
	fxEachMem(t, func(t *testing.T, f vertex.Format) {
		db := (&fxStore{name: "memory", mem: trie.NewMemoryBackend()}).open(t, f, 0)
		fr := db.Begin()
		root, err := fr.StateRoot()
		if err != nil || root != hashkey.EmptyRoot {
			t.Fatalf("empty state root %v, %v", root, err)
		}
		p, err := fr.AccountProof(fxAddr(0))
		if err != nil {
			t.Fatal(err)
		}
		if v, err := trie.VerifyProof(root, fxAddr(0).Bytes(), p); v != nil || err != nil {
			t.Fatalf("empty state: %x, %v", v, err)
		}
		m := fxModel{}
		fxUpdate(t, fr, m, fxAddr(0), fxAcc(1, 2))
		fxSet(t, fr, m, fxAddr(0), fxSlot(0), 3)
		root = fxCheckRoot(t, fr, f, m, "one account")
		p, _ = fr.AccountProof(fxAddr(0))
		if len(p) != 1 {
			t.Fatalf("single-account proof has %d nodes, want 1 (the root leaf)", len(p))
		}
		v, err := trie.VerifyProof(root, fxAddr(0).Bytes(), p)
		sr, _ := fr.StorageRoot(fxAddr(0))
		if err != nil || !bytes.Equal(v, fxAccountRLP(m[fxAddr(0)].acc, sr)) {
			t.Fatalf("single account: %x, %v", v, err)
		}
		sp, _ := fr.StorageProof(fxAddr(0), fxSlot(0))
		if v, err := trie.VerifyProof(sr, fxSlot(0).Bytes(), sp); err != nil || !bytes.Equal(v, []byte{3}) {
			t.Fatalf("single slot: %x, %v", v, err)
		}
		if v, err := trie.VerifyProof(root, fxAddr(1).Bytes(), p); v != nil || err != nil {
			t.Fatalf("absent next to a single account: %x, %v", v, err)
		}
	})
}

// TestStateIteratorsFrames: Accounts and StorageSlots list exactly the model's
// accounts and non-zero slots, in ascending hash order, from a start key, through
// a frame on a persisted base; a stale frame's iterators report ErrStale.
func TestStateIteratorsFrames(t *testing.T) {
	fxEach(t, func(t *testing.T, f vertex.Format, st *fxStore) {
		db := st.open(t, f, 0)
		fr, m := fxProofState(t, db)
		keys := slices.SortedFunc(maps.Keys(m), fxCmp)
		for _, start := range []hashkey.Hash{{}, keys[len(keys)/2], fxAddr(77777)} {
			var want []hashkey.Hash
			for _, k := range keys {
				if fxCmp(k, start) >= 0 {
					want = append(want, k)
				}
			}
			var got []hashkey.Hash
			it := fr.Accounts(start)
			for it.Next() {
				h := it.Hash()
				got = append(got, h)
				acc := it.Account()
				w := m[h]
				if w == nil {
					t.Fatalf("iterator yields absent account %v", h)
				}
				wa := w.acc
				if wa.CodeHash == (hashkey.Hash{}) {
					wa.CodeHash = hashkey.EmptyCodeHash
				}
				if acc != wa {
					t.Fatalf("iterator: account %v = %+v, want %+v", h, acc, wa)
				}
			}
			if err := it.Err(); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("Accounts(%v): %d accounts, want %d", start, len(got), len(want))
			}
		}
		for _, addr := range []hashkey.Hash{fxAddr(1000), fxAddr(10), fxAddr(1), fxAddr(20)} {
			var want []hashkey.Hash
			if a := m[addr]; a != nil {
				want = slices.SortedFunc(maps.Keys(a.slots), fxCmp)
			}
			var got []hashkey.Hash
			it := fr.StorageSlots(addr, hashkey.Hash{})
			for it.Next() {
				v := it.Value()
				if w := m[addr].slots[it.Hash()]; v != w {
					t.Fatalf("slot %v of %v = %v, want %v", it.Hash(), addr, &v, &w)
				}
				got = append(got, it.Hash())
			}
			if err := it.Err(); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("StorageSlots(%v): %d slots, want %d", addr, len(got), len(want))
			}
		}
		fr.Rollback()
		if it := fr.Accounts(hashkey.Hash{}); it.Next() || !errors.Is(it.Err(), trie.ErrStale) {
			t.Fatalf("Accounts on a rolled-back frame: %v", it.Err())
		}
		if it := fr.StorageSlots(fxAddr(1000), hashkey.Hash{}); it.Next() || !errors.Is(it.Err(), trie.ErrStale) {
			t.Fatalf("StorageSlots on a rolled-back frame: %v", it.Err())
		}
	})
}
