package trietest

import (
	"bytes"
	"math/rand"
	"slices"
	"testing"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie"
	"github.com/holiman/uint256"
)

// StateAccounts returns n random accounts sorted by addrHash, like
// trie-bench's states: every 10th has 1 to 8 storage slots, sorted, non-zero.
func StateAccounts(n int, seed int64) []trie.AccountLeaf {
	rng := rand.New(rand.NewSource(seed))
	accts := make([]trie.AccountLeaf, n)
	for i := range accts {
		a := &accts[i]
		rng.Read(a.AddrHash[:])
		a.Account = trie.Account{Nonce: uint64(rng.Intn(1000)), Balance: *uint256.NewInt(rng.Uint64()), CodeHash: hashkey.EmptyCodeHash}
		if i%10 == 0 {
			a.Storage = make([]trie.SlotLeaf, 1+rng.Intn(8))
			for j := range a.Storage {
				rng.Read(a.Storage[j].Hash[:])
				a.Storage[j].Value = *uint256.NewInt(1 + uint64(rng.Intn(1<<20)))
			}
			slices.SortFunc(a.Storage, func(x, y trie.SlotLeaf) int { return bytes.Compare(x.Hash[:], y.Hash[:]) })
		}
	}
	slices.SortFunc(accts, func(x, y trie.AccountLeaf) int { return bytes.Compare(x.AddrHash[:], y.AddrHash[:]) })
	return accts
}

// LoadState writes accts into the empty db with a StateLoader, committed at
// block.
func LoadState(t testing.TB, db *trie.DB, accts []trie.AccountLeaf, block uint64) hashkey.Hash {
	t.Helper()
	l, err := db.NewStateLoader()
	Must(t, err, "NewStateLoader")
	for i := 0; i < len(accts); i += 4096 {
		Must(t, l.Add(accts[i:min(i+4096, len(accts))]), "Add")
	}
	root, err := l.Commit(block)
	Must(t, err, "Commit")
	return root
}

// GrowState inserts accts into db in random order by frames, persisting every
// `every` accounts at increasing blocks from 1: the IDs of a format-v1 store
// grown so are scattered over the ID space. It returns the last block.
func GrowState(t testing.TB, db *trie.DB, accts []trie.AccountLeaf, every int, seed int64) uint64 {
	t.Helper()
	order := rand.New(rand.NewSource(seed)).Perm(len(accts))
	block := db.Block()
	fr := db.Begin()
	for i, k := range order {
		a := &accts[k]
		Must(t, fr.UpdateAccount(a.AddrHash, a.Account), "UpdateAccount")
		for j := range a.Storage {
			Must(t, fr.UpdateStorage(a.AddrHash, a.Storage[j].Hash, &a.Storage[j].Value), "UpdateStorage")
		}
		if (i+1)%every == 0 || i == len(order)-1 {
			block++
			Must(t, db.Persist(fr, block), "Persist")
			fr = db.Begin()
		}
	}
	fr.Rollback()
	return block
}

// DumpState returns every account of fr's state with its storage, sorted.
func DumpState(t testing.TB, fr *trie.Frame) []trie.AccountLeaf {
	t.Helper()
	var out []trie.AccountLeaf
	it := fr.Accounts(hashkey.Hash{})
	for it.Next() {
		a := trie.AccountLeaf{AddrHash: it.Hash(), Account: it.Account()}
		s := fr.StorageSlots(a.AddrHash, hashkey.Hash{})
		for s.Next() {
			a.Storage = append(a.Storage, trie.SlotLeaf{Hash: s.Hash(), Value: s.Value()})
		}
		Must(t, s.Err(), "StorageSlots")
		out = append(out, a)
	}
	Must(t, it.Err(), "Accounts")
	return out
}
