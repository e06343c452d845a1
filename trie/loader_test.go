package trie_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/internal/trietest"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// countingBackend counts the batches written to the backend it wraps.
type countingBackend struct {
	trie.Backend
	writes int
}

func (c *countingBackend) Write(b *vertex.Batch) error {
	c.writes++
	return c.Backend.Write(b)
}

// loadInChunks adds accs to a new loader of db in chunks of random sizes and
// commits them as block.
func loadInChunks(t *testing.T, db *trie.DB, rng *rand.Rand, accs []trie.AccountLeaf, block uint64) hashkey.Hash {
	t.Helper()
	l, err := db.NewStateLoader()
	trietest.Must(t, err, "NewStateLoader")
	for rest := accs; len(rest) > 0; {
		n := min(len(rest), 1+rng.Intn(3000))
		trietest.Must(t, l.Add(rest[:n]), "Add")
		rest = rest[n:]
	}
	root, err := l.Commit(block)
	trietest.Must(t, err, "Commit")
	return root
}

// TestStateLoader streams states of several sizes into empty databases in both
// formats and checks the root against one-by-one inserts (small states) and
// BulkLoadAccounts (large ones), that the loaded state is the persisted base
// (root, block, reads, a reopen), that every record it wrote is reachable, that
// a large load was written in several batches, and that the state takes
// further writes.
func TestStateLoader(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	for _, n := range []int{0, 1, 2, 2000, 40000} {
		accs := trietest.RandomAccountLeaves(rng, n, 5, 30)
		for _, f := range formats {
			ref, _ := trie.Open(trie.NewMemoryBackend(), &trie.Options{Format: f})
			rtx := ref.Begin()
			if n <= 2000 {
				insertAccountLeaves(t, rtx, accs)
			} else {
				trietest.Must(t, rtx.BulkLoadAccounts(accs), "BulkLoadAccounts")
			}
			want, _ := rtx.StateRoot()

			mem := trie.NewMemoryBackend()
			cb := &countingBackend{Backend: mem}
			db, err := trie.Open(cb, &trie.Options{Format: f})
			trietest.Must(t, err, "Open")
			stale := db.Begin() // a frame on the empty base: stale once the load commits
			writesBefore := cb.writes
			root := loadInChunks(t, db, rng, accs, 7)
			if root != want {
				t.Fatalf("%d accounts, %v: loaded root %v, want %v", n, f, root, want)
			}
			if r, _ := db.StateRoot(); r != want || db.Block() != 7 {
				t.Fatalf("%d accounts, %v: persisted root %v at block %d, want %v at 7", n, f, r, db.Block(), want)
			}
			if n == 40000 && cb.writes-writesBefore < 2 {
				t.Fatalf("a load of %d accounts was written in %d batch(es): it is not streaming", n, cb.writes-writesBefore)
			}
			if _, _, err := stale.Account(hashkey.Hash{}); !errors.Is(err, trie.ErrStale) {
				t.Fatalf("a frame begun before the load: %v, want ErrStale", err)
			}
			if n > 0 {
				recs := trietest.Records(t, mem)
				if reach := trietest.Reachable(t, recs); len(reach) != len(recs) {
					t.Fatalf("%d accounts, %v: %d records, %d reachable", n, f, len(recs), len(reach))
				}
			}

			// Reads, further writes and a reopen see the loaded state.
			fr := db.Begin()
			next := rtx.Begin()
			for i, k := 0, min(n, 50); i < k; i++ {
				a := accs[i*n/k] // distinct accounts: each is read before it is changed
				got, ok, err := fr.Account(a.AddrHash)
				if err != nil || !ok || got.Nonce != a.Account.Nonce || got.Balance != a.Account.Balance {
					t.Fatalf("account %v reads %+v, %v, %v; want %+v", a.AddrHash, got, ok, err, a.Account)
				}
				for _, s := range a.Storage {
					if v, err := fr.Storage(a.AddrHash, s.Hash); err != nil || v != s.Value {
						t.Fatalf("slot %v of %v reads %v, %v; want %v", s.Hash, a.AddrHash, &v, err, &s.Value)
					}
				}
				for _, w := range []*trie.Frame{fr, next} {
					trietest.Must(t, w.UpdateAccount(a.AddrHash, trie.Account{Nonce: 99}), "UpdateAccount")
				}
			}
			got, err := fr.StateRoot()
			wantNext, _ := next.StateRoot()
			if err != nil || got != wantNext {
				t.Fatalf("%d accounts, %v: root after writes %v (%v), want %v", n, f, got, err, wantNext)
			}
			trietest.Must(t, db.Close(), "Close")
			db, err = trie.Open(mem, &trie.Options{Format: f})
			trietest.Must(t, err, "reopen")
			if r, _ := db.StateRoot(); r != want {
				t.Fatalf("%d accounts, %v: reopened root %v, want %v", n, f, r, want)
			}
			db.Close()
		}
	}
}

func TestStateLoaderErrors(t *testing.T) {
	rng := rand.New(rand.NewSource(12))
	accs := trietest.RandomAccountLeaves(rng, 100, 3, 5)
	db, _ := trie.Open(trie.NewMemoryBackend(), nil)
	defer db.Close()

	// Out of order across Add calls: the load fails and stays failed.
	l, err := db.NewStateLoader()
	trietest.Must(t, err, "NewStateLoader")
	if _, err := db.NewStateLoader(); !errors.Is(err, trie.ErrBulkLoad) {
		t.Fatalf("a second concurrent loader: %v, want ErrBulkLoad", err)
	}
	trietest.Must(t, l.Add(accs[50:]), "Add")
	if err := l.Add(accs[:50]); !errors.Is(err, trie.ErrBulkLoad) {
		t.Fatalf("accounts below the last one: %v, want ErrBulkLoad", err)
	}
	if _, err := l.Commit(1); !errors.Is(err, trie.ErrBulkLoad) {
		t.Fatalf("Commit after a failed Add: %v, want the Add's error", err)
	}
	if r, _ := db.StateRoot(); r != hashkey.EmptyRoot {
		t.Fatalf("a failed load changed the root to %v", r)
	}

	// A zero slot value, then a clean load after an aborted one.
	bad := []trie.AccountLeaf{{AddrHash: hashkey.Hash{1}, Storage: []trie.SlotLeaf{{Hash: hashkey.Hash{2}}}}}
	l, err = db.NewStateLoader()
	trietest.Must(t, err, "NewStateLoader after a failed load")
	if err := l.Add(bad); !errors.Is(err, trie.ErrBulkLoad) {
		t.Fatalf("zero slot: %v, want ErrBulkLoad", err)
	}
	l.Abort()
	root := loadInChunks(t, db, rng, accs, 3)
	if _, err := l.Commit(4); !errors.Is(err, trie.ErrLoaderDone) {
		t.Fatalf("Commit after Abort: %v, want ErrLoaderDone", err)
	}
	if r, _ := db.StateRoot(); r != root {
		t.Fatalf("root %v after the load, want %v", r, root)
	}

	// Only an empty database can be loaded.
	if _, err := db.NewStateLoader(); !errors.Is(err, trie.ErrBulkLoad) {
		t.Fatalf("loader on a non-empty database: %v, want ErrBulkLoad", err)
	}
}

// TestStateLoaderPersistDuring checks that a Persist during a load makes the
// load fail with ErrStale and leaves the persisted state as the Persist made it.
func TestStateLoaderPersistDuring(t *testing.T) {
	rng := rand.New(rand.NewSource(13))
	accs := trietest.RandomAccountLeaves(rng, 3000, 4, 10)
	for _, f := range formats {
		mem := trie.NewMemoryBackend()
		db, _ := trie.Open(mem, &trie.Options{Format: f})
		l, err := db.NewStateLoader()
		trietest.Must(t, err, "NewStateLoader")
		trietest.Must(t, l.Add(accs[:1500]), "Add")

		fr := db.Begin()
		insertAccountLeaves(t, fr, accs[:10])
		want, _ := fr.StateRoot()
		trietest.Must(t, db.Persist(fr, 1), "Persist")

		trietest.Must(t, l.Add(accs[1500:]), "Add (buffered)")
		if _, err := l.Commit(2); !errors.Is(err, trie.ErrStale) {
			t.Fatalf("%v: Commit after a Persist: %v, want ErrStale", f, err)
		}
		if r, _ := db.StateRoot(); r != want || db.Block() != 1 {
			t.Fatalf("%v: root %v at block %d after the failed load, want %v at 1", f, r, db.Block(), want)
		}
		db.Close()
		db, _ = trie.Open(mem, &trie.Options{Format: f})
		if r, _ := db.StateRoot(); r != want {
			t.Fatalf("%v: reopened root %v, want %v", f, r, want)
		}
		db.Close()
	}
}

// TestLoadPathsSameRecords builds one state (more accounts than the parallel
// threshold; accounts with no, one and many slots, storage on the first
// account of each of the root's sub-tries) by BulkLoadAccounts on 1, 2 and 4
// workers then Persist, and by a StateLoader, in both formats, with and
// without children's keys, and checks that all store the same records byte
// for byte (and the same admin record) and the root of one-by-one inserts.
func TestLoadPathsSameRecords(t *testing.T) {
	rng := rand.New(rand.NewSource(14))
	accs := trietest.RandomAccountLeaves(rng, 6000, 4, 12)
	slot := func() trie.SlotLeaf {
		var s trie.SlotLeaf
		rng.Read(s.Hash[:])
		s.Value.SetUint64(1 + rng.Uint64())
		return s
	}
	for i := range accs {
		switch {
		case i == 0 || accs[i].AddrHash[0]>>4 != accs[i-1].AddrHash[0]>>4:
			accs[i].Storage = []trie.SlotLeaf{slot(), slot(), slot()} // a run's first account
		case i%97 == 1:
			accs[i].Storage = []trie.SlotLeaf{slot()}
		case i%1000 == 2:
			accs[i].Storage = nil
			for j := 0; j < 500; j++ {
				accs[i].Storage = append(accs[i].Storage, slot())
			}
		}
		sort.Slice(accs[i].Storage, func(a, b int) bool {
			return bytes.Compare(accs[i].Storage[a].Hash[:], accs[i].Storage[b].Hash[:]) < 0
		})
	}

	for _, f := range formats {
		ref, _ := trie.Open(trie.NewMemoryBackend(), &trie.Options{Format: f})
		rtx := ref.Begin()
		insertAccountLeaves(t, rtx, accs)
		want, _ := rtx.StateRoot()
		ref.Close()

		for _, noChild := range []bool{false, true} {
			name := fmt.Sprintf("%v, NoChildKeys %v", f, noChild)
			type stored struct {
				what  string
				recs  map[vertex.ID][]byte
				admin []byte
			}
			var all []stored
			for _, workers := range []int{1, 2, 4} {
				mem := trie.NewMemoryBackend()
				db, _ := trie.Open(mem, &trie.Options{Format: f, Workers: workers, Records: trietest.RecordsOf(noChild)})
				fr := db.Begin()
				trietest.Must(t, fr.BulkLoadAccounts(accs), "BulkLoadAccounts")
				trietest.Must(t, db.Persist(fr, 5), "Persist")
				trietest.Must(t, db.Flush(), "Flush") // the test reads the backend
				if r, _ := db.StateRoot(); r != want {
					t.Fatalf("%s, %d workers: root %v, want %v", name, workers, r, want)
				}
				admin, _ := mem.Admin()
				all = append(all, stored{fmt.Sprintf("bulk load on %d workers", workers), trietest.Records(t, mem), admin})
				db.Close()
			}
			mem := trie.NewMemoryBackend()
			db, _ := trie.Open(mem, &trie.Options{Format: f, Records: trietest.RecordsOf(noChild)})
			if r := loadInChunks(t, db, rng, accs, 5); r != want {
				t.Fatalf("%s: loaded root %v, want %v", name, r, want)
			}
			admin, _ := mem.Admin()
			all = append(all, stored{"state loader", trietest.Records(t, mem), admin})
			db.Close()

			a := all[0]
			withKeys := 0
			for _, rec := range a.recs {
				if v, err := vertex.Decode(rec); err == nil && v.ChildKeys != nil {
					withKeys++
				}
			}
			if noChild != (withKeys == 0) {
				t.Fatalf("%s: %d records with children's keys", name, withKeys)
			}
			for _, b := range all[1:] {
				if !bytes.Equal(a.admin, b.admin) {
					t.Fatalf("%s: admin record %x by %s, %x by %s", name, a.admin, a.what, b.admin, b.what)
				}
				if len(a.recs) != len(b.recs) {
					t.Fatalf("%s: %d records by %s, %d by %s", name, len(a.recs), a.what, len(b.recs), b.what)
				}
				for id, rec := range a.recs {
					if !bytes.Equal(rec, b.recs[id]) {
						t.Fatalf("%s: record %d is %x by %s, %x by %s", name, id, rec, a.what, b.recs[id], b.what)
					}
				}
			}
		}
	}
}
