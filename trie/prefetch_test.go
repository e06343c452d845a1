package trie_test

import (
	"testing"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/internal/trietest"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// TestPrefetchColdHash: on a reopened (cold) keys-once store, a block that
// writes accounts all over the trie re-hashes branches whose clean children,
// and the storage roots of the clean contract accounts among them, are only
// in the store: the batched prefetch reads them (both rounds), and the root
// is the model's, in both layouts and on one worker and two.
func TestPrefetchColdHash(t *testing.T) {
	for _, f := range trietest.Formats {
		for _, workers := range []int{1, 2} {
			s := trietest.NewStore(t, trietest.Memory)
			s.Records = vertex.KeysOnce
			db := s.Open(f)
			m := trietest.Genesis(t, db, 4000) // every 5th account with storage
			trietest.Must(t, db.Close(), "Close")
			db = s.OpenWith(trie.Options{Format: f, Workers: workers})
			before := db.BackendStats()
			fr := db.Begin()
			for i := 0; i < 4000; i += 9 {
				trietest.PutAccount(t, fr, m, trietest.Addr(i), trietest.Acc(7, uint64(i)))
			}
			trietest.CheckRoot(t, fr, f, m, "cold block")
			d := trietest.StatsDiff(db.BackendStats(), before)
			if f == vertex.FormatV2 && d.BatchReads == 0 {
				t.Errorf("%v, %d workers: no group read re-hashing a cold keys-once store: %+v", f, workers, d)
			}
			trietest.Must(t, db.Persist(fr, 2), "Persist")
			db = s.Reopen(db, f)
			trietest.CheckState(t, db.Begin(), m)
		}
	}
}

// TestPrefetchPinsAccountBranches: Prefetch pins the account trie's branches
// it reads near the root (all of them in a state this small) and none of a
// storage trie's: prefetching the contracts' slots pins exactly what
// prefetching the contracts' accounts does, though it reads more.
func TestPrefetchPinsAccountBranches(t *testing.T) {
	s := trietest.NewStore(t, trietest.Memory)
	s.Records = vertex.KeysOnce
	db := s.Open(vertex.FormatV2)
	trietest.Genesis(t, db, 4000) // every 5th account a contract with 1 to 8 slots
	var accts []hashkey.Hash
	var slots []trie.StorageKey
	for i := 0; i < 4000; i += 5 {
		accts = append(accts, trietest.Addr(i))
		for j := 0; j <= i%8; j++ {
			slots = append(slots, trie.StorageKey{Account: trietest.Addr(i), Slot: trietest.Slot(j)})
		}
	}
	prefetch := func(accts []hashkey.Hash, slots []trie.StorageKey) (pinned int, reads uint64) {
		db = s.Reopen(db, vertex.FormatV2)
		before := db.BackendStats()
		trietest.Must(t, db.Begin().Prefetch(accts, slots), "Prefetch")
		d := trietest.StatsDiff(db.BackendStats(), before)
		return db.CacheStats().Pinned, d.Reads()
	}
	byAccount, accountReads := prefetch(accts, nil)
	bySlot, slotReads := prefetch(nil, slots)
	if byAccount == 0 {
		t.Fatal("prefetching 800 accounts pinned no branch")
	}
	if slotReads <= accountReads {
		t.Fatalf("prefetching the slots read %d times, the accounts alone %d: no storage trie read", slotReads, accountReads)
	}
	if bySlot != byAccount {
		t.Fatalf("prefetching the contracts' slots pinned %d records, their accounts %d", bySlot, byAccount)
	}
}

// TestPrefetchUpperLevels: on a reopened store, PrefetchUpperLevels pins the
// same branches that prefetching every account's path pins (every account
// branch near the root, in a state this small); called again it reads
// nothing, a Prefetch of every account after it pins nothing more, and the
// state reads back unchanged. Both layouts, both record variants.
func TestPrefetchUpperLevels(t *testing.T) {
	for _, f := range trietest.Formats {
		for _, keysOnce := range []bool{true, false} {
			s := trietest.NewStore(t, trietest.Memory)
			s.Records = trietest.RecordsOf(keysOnce)
			db := s.Open(f)
			m := trietest.Genesis(t, db, 4000)
			var accts []hashkey.Hash
			for i := 0; i < 4000; i++ {
				accts = append(accts, trietest.Addr(i))
			}
			db = s.Reopen(db, f)
			trietest.Must(t, db.Begin().Prefetch(accts, nil), "Prefetch")
			want := db.CacheStats().Pinned

			db = s.Reopen(db, f)
			trietest.Must(t, db.Begin().PrefetchUpperLevels(), "PrefetchUpperLevels")
			got := db.CacheStats().Pinned
			if got == 0 || got != want {
				t.Fatalf("%v, keys once %v: PrefetchUpperLevels pinned %d records, a Prefetch of every account %d", f, keysOnce, got, want)
			}
			before := db.BackendStats()
			trietest.Must(t, db.Begin().PrefetchUpperLevels(), "PrefetchUpperLevels again")
			if d := trietest.StatsDiff(db.BackendStats(), before); d.Reads() != 0 {
				t.Fatalf("%v, keys once %v: PrefetchUpperLevels read %+v with the upper levels cached", f, keysOnce, d)
			}
			trietest.Must(t, db.Begin().Prefetch(accts, nil), "Prefetch after")
			if after := db.CacheStats().Pinned; after != got {
				t.Fatalf("%v, keys once %v: Prefetch of every account pinned %d more after PrefetchUpperLevels", f, keysOnce, after-got)
			}
			trietest.CheckState(t, db.Begin(), m)
		}
	}
}

// TestPrefetchUpperLevelsBesideBlocks: PrefetchUpperLevels on the persisted
// frame runs beside blocks that write and persist (it reads a part at a time,
// so each Persist waits for one part): the blocks' roots and the state stay
// the model's. Run with -race.
func TestPrefetchUpperLevelsBesideBlocks(t *testing.T) {
	db, m := reopenedGenesis(t, 4000)
	done := make(chan error, 1)
	go func() { done <- db.Begin().PrefetchUpperLevels() }()
	for b := uint64(1); b <= 8; b++ {
		fr := db.Begin()
		for i := int(b); i < 4000; i += 97 {
			trietest.PutAccount(t, fr, m, trietest.Addr(i), trietest.Acc(b, uint64(i)))
		}
		trietest.CheckRoot(t, fr, vertex.FormatV2, m, "block beside the prefetch")
		trietest.Must(t, db.Persist(fr, db.Block()+1), "Persist")
	}
	trietest.Must(t, <-done, "PrefetchUpperLevels")
	trietest.CheckState(t, db.Begin(), m)
}

// TestPrefetchNewKeysCoverTheHash: Prefetch of keys the state does not hold
// yet reads, where a key's path ends in a branch (at an empty slot, or off
// the branch's path), that branch's children, which the write's hash needs:
// on a reopened keys-once v2 store, a block that inserts the prefetched
// accounts hashes without a backend read, and its root is the model's.
func TestPrefetchNewKeysCoverTheHash(t *testing.T) {
	db, m := reopenedGenesis(t, 4000)
	var accts []hashkey.Hash
	for i := 4000; i < 4200; i++ {
		accts = append(accts, trietest.Addr(i))
	}
	parent := db.Begin()
	fr := parent.Begin()
	trietest.Must(t, parent.Prefetch(accts, nil), "Prefetch")
	for i := 4000; i < 4200; i++ {
		trietest.PutAccount(t, fr, m, trietest.Addr(i), trietest.Acc(1, uint64(i)))
	}
	before := db.BackendStats()
	_, err := fr.StateRoot()
	trietest.Must(t, err, "StateRoot")
	if d := trietest.StatsDiff(db.BackendStats(), before); d.Reads() != 0 {
		t.Fatalf("hashing 200 prefetched new accounts read the backend: %+v", d)
	}
	trietest.CheckRoot(t, fr, vertex.FormatV2, m, "block of new accounts")
}

// reopenedGenesis returns a keys-once v2 store in memory holding the genesis
// of n accounts (trietest.Genesis), reopened: its caches empty.
func reopenedGenesis(t *testing.T, n int) (*trie.DB, trietest.Model) {
	s := trietest.NewStore(t, trietest.Memory)
	s.Records = vertex.KeysOnce
	db := s.Open(vertex.FormatV2)
	m := trietest.Genesis(t, db, n)
	return s.Reopen(db, vertex.FormatV2), m
}

// TestHashNeedsNoStorageTrie: a contract's leaf records its storage root, so
// re-hashing the account trie's branches above a block's writes, whose clean
// children include contracts, reads no vertex of any storage trie: with every
// storage trie's records deleted from the store the root is still right. (A
// leaf without its root recorded would need its storage root's record.)
func TestHashNeedsNoStorageTrie(t *testing.T) {
	for _, f := range []vertex.Format{vertex.FormatV1, vertex.FormatV2} {
		s := trietest.NewStore(t, trietest.Memory)
		s.Records = vertex.KeysOnce
		db := s.Open(f)
		m := trietest.Genesis(t, db, 2000) // every fifth account a contract
		trietest.Must(t, db.Close(), "Close")
		deleted := 0
		s.Raw(func(b trie.Backend) {
			recs := trietest.Records(t, b)
			var del []vertex.ID
			for _, rec := range recs {
				if v, err := vertex.Decode(rec); err == nil && v.Acc != nil && v.Acc.Storage != vertex.NoID {
					if v.Acc.StorageKey == (hashkey.Hash{}) {
						t.Fatalf("%v: a persisted contract leaf does not record its storage root", f)
					}
					del = appendSubtrie(t, del, recs, v.Acc.Storage)
				}
			}
			trietest.Must(t, b.Write(&vertex.Batch{Deletes: del}), "deleting the storage tries")
			deleted = len(del)
		})
		if deleted < 400 {
			t.Fatalf("%v: deleted %d storage-trie records, want every contract's", f, deleted)
		}
		db = s.Open(f)
		fr := db.Begin()
		for i := 1; i < 2000; i += 5 { // accounts beside contracts 0, 5, 10, …
			trietest.PutAccount(t, fr, m, trietest.Addr(i), trietest.Acc(uint64(i), 7))
		}
		got, err := fr.StateRoot()
		trietest.Must(t, err, "%v: StateRoot without the storage tries", f)
		if want := trietest.OracleRoot(t, m); got != want {
			t.Fatalf("%v: StateRoot = %v, want %v", f, got, want)
		}
		trietest.Must(t, db.Close(), "Close")
	}
}

// appendSubtrie appends to ids the IDs of the sub-trie at id in recs.
func appendSubtrie(t *testing.T, ids []vertex.ID, recs map[vertex.ID][]byte, id vertex.ID) []vertex.ID {
	v, err := vertex.Decode(recs[id])
	trietest.Must(t, err, "decoding vertex %d", id)
	ids = append(ids, id)
	if v.Kind == vertex.Branch {
		for n := 0; n < vertex.BranchSlots; n++ {
			if v.Used&(1<<n) != 0 {
				ids = appendSubtrie(t, ids, recs, v.Child(n))
			}
		}
	}
	return ids
}
