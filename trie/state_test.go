package trie_test

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/hexstate/hexstate/internal/trietest"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// This file tests the EIP-1186 proofs of the state API (account proofs against
// the state root, storage proofs against the account's storage root, for present
// and absent keys, and their rejection once tampered with) and the account and
// storage iterators.

// TestStateProofsTampered: a proof with any node changed, a node missing, a
// wrong root or a different key does not prove the value.
func TestStateProofsTampered(t *testing.T) {
	trietest.EachFormat(t, func(t *testing.T, f vertex.Format) {
		db := trietest.NewStore(t, trietest.Memory).Open(f)
		fr, m := trietest.ProofState(t, db)
		root, err := fr.StateRoot()
		if err != nil {
			t.Fatal(err)
		}
		addr := trietest.Addr(1000)
		sroot, _ := fr.StorageRoot(addr)
		slot := trietest.Slot(3)
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
		old, _ := fr.AccountProof(trietest.Addr(0))
		child := fr.Begin()
		trietest.PutAccount(t, child, m, trietest.Addr(0), trietest.Acc(12345, 1))
		newRoot, _ := child.StateRoot()
		if got, err := trie.VerifyProof(newRoot, trietest.Addr(0).Bytes(), old); err == nil {
			t.Fatalf("an old proof verifies against the new root: %x", got)
		}
	})
}

// TestStateProofsSmall: the empty state, a single account (the root is a leaf)
// and a single slot.
func TestStateProofsSmall(t *testing.T) {
	trietest.EachFormat(t, func(t *testing.T, f vertex.Format) {
		db := trietest.NewStore(t, trietest.Memory).Open(f)
		fr := db.Begin()
		root, err := fr.StateRoot()
		if err != nil || root != hashkey.EmptyRoot {
			t.Fatalf("empty state root %v, %v", root, err)
		}
		p, err := fr.AccountProof(trietest.Addr(0))
		if err != nil {
			t.Fatal(err)
		}
		if v, err := trie.VerifyProof(root, trietest.Addr(0).Bytes(), p); v != nil || err != nil {
			t.Fatalf("empty state: %x, %v", v, err)
		}
		m := trietest.Model{}
		trietest.PutAccount(t, fr, m, trietest.Addr(0), trietest.Acc(1, 2))
		trietest.PutSlot(t, fr, m, trietest.Addr(0), trietest.Slot(0), 3)
		root = trietest.CheckRoot(t, fr, f, m, "one account")
		p, _ = fr.AccountProof(trietest.Addr(0))
		if len(p) != 1 {
			t.Fatalf("single-account proof has %d nodes, want 1 (the root leaf)", len(p))
		}
		v, err := trie.VerifyProof(root, trietest.Addr(0).Bytes(), p)
		sr, _ := fr.StorageRoot(trietest.Addr(0))
		if err != nil || !bytes.Equal(v, trietest.AccountRLP(m[trietest.Addr(0)].Acc, sr)) {
			t.Fatalf("single account: %x, %v", v, err)
		}
		sp, _ := fr.StorageProof(trietest.Addr(0), trietest.Slot(0))
		if v, err := trie.VerifyProof(sr, trietest.Slot(0).Bytes(), sp); err != nil || !bytes.Equal(v, []byte{3}) {
			t.Fatalf("single slot: %x, %v", v, err)
		}
		if v, err := trie.VerifyProof(root, trietest.Addr(1).Bytes(), p); v != nil || err != nil {
			t.Fatalf("absent next to a single account: %x, %v", v, err)
		}
	})
}
