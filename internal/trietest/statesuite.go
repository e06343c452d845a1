package trietest

// State-API tests that run on every store (from trie/state_test.go and trie/parallel_test.go).

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// StateProofs: AccountProof verifies against StateRoot to the account's RLP
// (whose storage root is StorageRoot), StorageProof against StorageRoot to the
// slot's RLP; absent accounts and slots are proven absent (nil, nil).
func StateProofs(t *testing.T, stores ...Opener) {
	Each(t, stores, func(t *testing.T, st *Store, f vertex.Format) {
		db := st.Open(f)
		fr, m := ProofState(t, db)
		root := CheckRoot(t, fr, f, m, "proof state")
		absentSlots := []hashkey.Hash{Slot(7), Slot(5000), Slot(5001)}
		for _, addr := range slices.SortedFunc(maps.Keys(m), CmpHash) {
			a := m[addr]
			proof, err := fr.AccountProof(addr)
			if err != nil {
				t.Fatalf("AccountProof: %v", err)
			}
			val, err := trie.VerifyProof(root, addr[:], proof)
			if err != nil || val == nil {
				t.Fatalf("VerifyProof(account %v) = %x, %v", addr, val, err)
			}
			nonce, balance, sroot, code := DecodeAccount(t, val)
			want := a.Acc
			if want.CodeHash == (hashkey.Hash{}) {
				want.CodeHash = hashkey.EmptyCodeHash
			}
			if nonce != want.Nonce || balance != want.Balance || code != want.CodeHash {
				t.Fatalf("account %v: proven [%d %v %v], want %+v", addr, nonce, &balance, code, want)
			}
			gotSR, err := fr.StorageRoot(addr)
			if err != nil || sroot != gotSR || sroot != OracleStorageRoot(t, a.Slots) {
				t.Fatalf("account %v: proven storage root %v, StorageRoot %v (%v), oracle %v", addr, sroot, gotSR, err, OracleStorageRoot(t, a.Slots))
			}
			if !bytes.Equal(val, AccountRLP(a.Acc, sroot)) {
				t.Fatalf("account %v: proven value %x is not the canonical RLP %x", addr, val, AccountRLP(a.Acc, sroot))
			}
			for slot, v := range a.Slots {
				sp, err := fr.StorageProof(addr, slot)
				if err != nil {
					t.Fatal(err)
				}
				got, err := trie.VerifyProof(sroot, slot[:], sp)
				if err != nil || !bytes.Equal(got, RLPString(v.Bytes())) {
					t.Fatalf("slot %v of %v: proven %x, %v; want RLP of %v", slot, addr, got, err, &v)
				}
			}
			for _, slot := range absentSlots {
				if _, ok := a.Slots[slot]; ok {
					continue
				}
				sp, err := fr.StorageProof(addr, slot)
				if err != nil {
					t.Fatal(err)
				}
				if len(a.Slots) == 0 && len(sp) != 0 {
					t.Fatalf("account %v without storage: storage proof of %d nodes", addr, len(sp))
				}
				if got, err := trie.VerifyProof(sroot, slot[:], sp); got != nil || err != nil {
					t.Fatalf("absent slot %v of %v: proven %x, %v; want nil, nil", slot, addr, got, err)
				}
			}
		}
		for _, addr := range []hashkey.Hash{Addr(20), Addr(9999), Addr(10000), Addr(10001)} {
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
			sp, err := fr.StorageProof(addr, Slot(0))
			if err != nil || len(sp) != 0 {
				t.Fatalf("absent account %v: storage proof of %d nodes, %v", addr, len(sp), err)
			}
		}
		// A persisted state proves the same.
		if err := db.Persist(fr, 2); err != nil {
			t.Fatal(err)
		}
		fresh := db.Begin()
		p1, _ := fr.AccountProof(Addr(1000))
		p2, err := fresh.AccountProof(Addr(1000))
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

// StateIteratorsFrames: Accounts and StorageSlots list exactly the model's
// accounts and non-zero slots, in ascending hash order, from a start key, through
// a frame on a persisted base; a stale frame's iterators report ErrStale.
func StateIteratorsFrames(t *testing.T, stores ...Opener) {
	Each(t, stores, func(t *testing.T, st *Store, f vertex.Format) {
		db := st.Open(f)
		fr, m := ProofState(t, db)
		keys := slices.SortedFunc(maps.Keys(m), CmpHash)
		for _, start := range []hashkey.Hash{{}, keys[len(keys)/2], Addr(77777)} {
			var want []hashkey.Hash
			for _, k := range keys {
				if CmpHash(k, start) >= 0 {
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
				wa := w.Acc
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
		for _, addr := range []hashkey.Hash{Addr(1000), Addr(10), Addr(1), Addr(20)} {
			var want []hashkey.Hash
			if a := m[addr]; a != nil {
				want = slices.SortedFunc(maps.Keys(a.Slots), CmpHash)
			}
			var got []hashkey.Hash
			it := fr.StorageSlots(addr, hashkey.Hash{})
			for it.Next() {
				v := it.Value()
				if w := m[addr].Slots[it.Hash()]; v != w {
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
		if it := fr.StorageSlots(Addr(1000), hashkey.Hash{}); it.Next() || !errors.Is(it.Err(), trie.ErrStale) {
			t.Fatalf("StorageSlots on a rolled-back frame: %v", it.Err())
		}
	})
}

// ParallelStackedFrames: frames stacked 3 deep on a persisted base (each
// block's frame begun on the previous one, the oldest persisted when three are
// pending), on RocksDB for the parallel side. With hashEvery 2, every other
// frame is begun on an unhashed parent, so the child's hashers compute the
// parent's keys (queued as pending clones in parallel mode).
func ParallelStackedFrames(t *testing.T, stores ...Opener) {
	accounts, withStorage, blocks, perBlock := Sizes()
	for _, f := range Formats {
		for _, hashEvery := range []int{1, 2} {
			t.Run(fmt.Sprintf("%v/hashEvery=%d", f, hashEvery), func(t *testing.T) {
				ser := NewStore(t, Memory).OpenWith(trie.Options{Format: f, Workers: 1})
				par := NewStore(t, stores[0]).OpenWith(trie.Options{Format: f, Workers: 4})
				g := NewGen(uint64(f)*10 + uint64(hashEvery))
				m := Model{}
				var ps, pp []*trie.Frame // pending frames, oldest first
				for b := 0; b <= blocks+2; b++ {
					var ops []Op
					if b == 0 {
						ops = g.Genesis(accounts, withStorage)
					} else {
						ops = g.Block(perBlock)
					}
					var ts, tp *trie.Frame
					if len(ps) == 0 {
						ts, tp = ser.Begin(), par.Begin()
					} else {
						ts, tp = ps[len(ps)-1].Begin(), pp[len(pp)-1].Begin()
					}
					ApplyOps(t, ts, nil, ops)
					ApplyOps(t, tp, m, ops)
					ps, pp = append(ps, ts), append(pp, tp)
					if b%hashEvery == 0 || b >= blocks {
						SameRoot(t, ts, tp, fmt.Sprintf("block %d", b))
						if b == blocks/2 || b == blocks+2 {
							CheckRoot(t, tp, f, m, fmt.Sprintf("block %d", b))
						}
					}
					if len(ps) == 3 {
						if err := ser.Persist(ps[0], uint64(b-2)); err != nil {
							t.Fatal(err)
						}
						if err := par.Persist(pp[0], uint64(b-2)); err != nil {
							t.Fatal(err)
						}
						rs, _ := ser.StateRoot()
						rp, _ := par.StateRoot()
						if rs != rp {
							t.Fatalf("persisted block %d: serial root %v, parallel root %v", b-2, rs, rp)
						}
						ps, pp = ps[1:], pp[1:]
					}
				}
				// The frames still pending read the right state on top of the base.
				CheckState(t, pp[len(pp)-1], m)
			})
		}
	}
}
