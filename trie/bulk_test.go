package trie_test

import (
	"bytes"
	"errors"
	"math/rand"
	"sort"
	"testing"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/internal/trietest"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
	"github.com/holiman/uint256"
)

var formats = []vertex.Format{vertex.FormatV1, vertex.FormatV2}

// TestBulkLoadMatchesInserts loads generic keys of mixed lengths (keys that
// prefix others, a root with an extension, a key that ends at the root branch)
// in both formats, serially and (above bulkParallelMin keys) on 2 and 4
// workers, and compares the root with one-by-one inserts, before and after a
// further write, and the persisted records between numbers of workers.
func TestBulkLoadMatchesInserts(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	// Bytes 0..3 only: every key starts with nibble 0, so the root has an
	// extension, and short keys prefix longer ones.
	small := func(n, maxLen int) map[string][]byte {
		set := map[string][]byte{}
		for i := 0; i < n; i++ {
			k := make([]byte, 1+rng.Intn(maxLen))
			for j := range k {
				k[j] = byte(rng.Intn(4))
			}
			v := make([]byte, 1+rng.Intn(60))
			rng.Read(v)
			set[string(k)] = v
		}
		return set
	}
	rootValue := small(12000, 10) // "a" + each key, and "a" itself: a value at the root branch
	prefixed := map[string][]byte{"a": []byte("root value")}
	for k, v := range rootValue {
		prefixed["a"+k] = v
	}
	sets := map[string]map[string][]byte{"few": small(3000, 6), "many": small(12000, 8), "root-value": prefixed}
	for name, set := range sets {
		var keys, values [][]byte
		for k := range set {
			keys = append(keys, []byte(k))
		}
		sort.Slice(keys, func(i, j int) bool { return bytes.Compare(keys[i], keys[j]) < 0 })
		for _, k := range keys {
			values = append(values, set[string(k)])
		}
		for _, f := range formats {
			records := map[int]map[vertex.ID][]byte{}
			for _, workers := range []int{1, 2, 4} {
				ref := trie.NewTrieFormat(f)
				for i, k := range keys {
					ref.Put(k, values[i])
				}
				mem := trie.NewMemoryBackend()
				db, _ := trie.Open(mem, &trie.Options{Format: f, Workers: workers})
				fr := db.Begin()
				if err := trietest.G(fr).BulkLoad(keys, values); err != nil {
					t.Fatal(err)
				}
				got, err := trietest.G(fr).Hash()
				if err != nil || got != ref.Hash() {
					t.Fatalf("%s, %v, %d workers: bulk root %v (%v), inserts %v", name, f, workers, got, err, ref.Hash())
				}
				// The loaded trie is a normal trie: it takes writes and persists.
				trietest.G(fr).Put(keys[0], []byte("changed"))
				ref.Put(keys[0], []byte("changed"))
				trietest.G(fr).Put([]byte{9, 9, 9}, []byte("new"))
				ref.Put([]byte{9, 9, 9}, []byte("new"))
				if err := db.Persist(fr, 1); err != nil {
					t.Fatal(err)
				}
				trietest.Must(t, db.Flush(), "Flush") // the test reads the backend
				if r, _ := db.StateRoot(); r != ref.Hash() {
					t.Fatalf("%s, %v, %d workers: persisted root %v, want %v", name, f, workers, r, ref.Hash())
				}
				records[workers] = trietest.Records(t, mem)
				db.Close()
			}
			for _, w := range []int{2, 4} {
				if len(records[1]) != len(records[w]) {
					t.Fatalf("%s, %v: %d records with 1 worker, %d with %d", name, f, len(records[1]), len(records[w]), w)
				}
				for id, rec := range records[1] {
					if !bytes.Equal(rec, records[w][id]) {
						t.Fatalf("%s, %v: record %d differs between 1 and %d workers", name, f, id, w)
					}
				}
			}
		}
	}
}

func TestBulkLoadAccounts(t *testing.T) {
	rng := rand.New(rand.NewSource(8))
	for _, f := range formats {
		accs := trietest.RandomAccountLeaves(rng, 2000, 7, 40)

		refDB, _ := trie.Open(trie.NewMemoryBackend(), &trie.Options{Format: f})
		ref := refDB.Begin()
		insertAccountLeaves(t, ref, accs)
		want, _ := ref.StateRoot()

		db, _ := trie.Open(trie.NewMemoryBackend(), &trie.Options{Format: f})
		fr := db.Begin()
		if err := fr.BulkLoadAccounts(accs); err != nil {
			t.Fatal(err)
		}
		if got, err := fr.StateRoot(); err != nil || got != want {
			t.Fatalf("%v: bulk root %v (%v), inserts %v", f, got, err, want)
		}
		a := accs[0]
		if len(a.Storage) > 0 {
			v, _ := fr.Storage(a.AddrHash, a.Storage[0].Hash)
			if v != a.Storage[0].Value {
				t.Fatalf("slot read %v, want %v", &v, &a.Storage[0].Value)
			}
		}
		// Unsorted input and a non-empty frame are refused.
		if err := db.Begin().BulkLoadAccounts([]trie.AccountLeaf{accs[1], accs[0]}); !errors.Is(err, trie.ErrBulkLoad) {
			t.Fatalf("unsorted: %v", err)
		}
		if err := fr.BulkLoadAccounts(accs[:1]); !errors.Is(err, trie.ErrBulkLoad) {
			t.Fatalf("non-empty: %v", err)
		}
		if err := db.Begin().BulkLoadAccounts([]trie.AccountLeaf{{AddrHash: hashkey.Hash{1}, Storage: []trie.SlotLeaf{{}}}}); !errors.Is(err, trie.ErrBulkLoad) {
			t.Fatalf("zero slot: %v", err)
		}
	}
}

func TestStateIterators(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	db, _ := trie.Open(trie.NewMemoryBackend(), nil)
	fr := db.Begin()
	var hashes []hashkey.Hash
	for i := 0; i < 500; i++ {
		var h hashkey.Hash
		rng.Read(h[:])
		hashes = append(hashes, h)
		fr.UpdateAccount(h, trie.Account{Nonce: uint64(i + 1)})
	}
	sort.Slice(hashes, func(i, j int) bool { return bytes.Compare(hashes[i][:], hashes[j][:]) < 0 })
	it := fr.Accounts(hashes[100])
	for i := 100; i < len(hashes); i++ {
		if !it.Next() || it.Hash() != hashes[i] || it.Account().Nonce == 0 {
			t.Fatalf("account %d: got %v, want %v (%v)", i, it.Hash(), hashes[i], it.Err())
		}
	}
	if it.Next() {
		t.Fatal("iterator went past the last account")
	}
	var slots []hashkey.Hash
	for i := 0; i < 50; i++ {
		var s hashkey.Hash
		rng.Read(s[:])
		slots = append(slots, s)
		fr.UpdateStorage(hashes[0], s, new(uint256.Int).SetUint64(uint64(i+1)))
	}
	sort.Slice(slots, func(i, j int) bool { return bytes.Compare(slots[i][:], slots[j][:]) < 0 })
	si := fr.StorageSlots(hashes[0], hashkey.Hash{})
	n := 0
	for si.Next() {
		if v := si.Value(); si.Hash() != slots[n] || v.IsZero() {
			t.Fatalf("slot %d: got %v=%v, want %v", n, si.Hash(), &v, slots[n])
		}
		n++
	}
	if n != len(slots) || si.Err() != nil {
		t.Fatalf("iterated %d slots of %d (%v)", n, len(slots), si.Err())
	}
	if fr.StorageSlots(hashes[1], hashkey.Hash{}).Next() {
		t.Fatal("account without storage iterated slots")
	}
}

// TestBulkLoadParallel loads enough accounts for the root's sub-tries to be
// built by parallel workers and checks, in both formats and with 1, 2 and 4
// workers, that the root equals one-by-one inserts, that every stored vertex is
// reachable, and that the trie takes further writes (which allocate above the
// load's IDs) with the right roots; and that 1, 2 and 4 workers persist
// byte-identical records (the same IDs: a parallel load numbers vertices as a
// serial one does).
func TestBulkLoadParallel(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	accs := trietest.RandomAccountLeaves(rng, 6000, 5, 20)

	for _, f := range formats {
		ref, _ := trie.Open(trie.NewMemoryBackend(), &trie.Options{Format: f})
		rtx := ref.Begin()
		insertAccountLeaves(t, rtx, accs)
		want, _ := rtx.StateRoot()

		records := map[int]map[vertex.ID][]byte{}
		for _, workers := range []int{1, 2, 4} {
			mem := trie.NewMemoryBackend()
			db, _ := trie.Open(mem, &trie.Options{Format: f, Workers: workers})
			fr := db.Begin()
			if err := fr.BulkLoadAccounts(accs); err != nil {
				t.Fatal(err)
			}
			if got, err := fr.StateRoot(); err != nil || got != want {
				t.Fatalf("%v, %d workers: bulk root %v (%v), inserts %v", f, workers, got, err, want)
			}
			trietest.Must(t, db.Persist(fr, 1), "Persist")
			trietest.Must(t, db.Flush(), "Flush") // the test reads the backend
			records[workers] = trietest.Records(t, mem)
			if reach := trietest.Reachable(t, records[workers]); len(reach) != len(records[workers]) {
				t.Fatalf("%v, %d workers: %d records, %d reachable", f, workers, len(records[workers]), len(reach))
			}

			// Further writes: new and changed accounts and slots, after the load.
			next := db.Begin()
			rnext := rtx.Begin()
			for i := 0; i < 300; i++ {
				a := accs[rng.Intn(len(accs))]
				var fresh hashkey.Hash
				rng.Read(fresh[:])
				for _, fr := range []*trie.Frame{next, rnext} {
					fr.UpdateAccount(fresh, trie.Account{Nonce: 1})
					fr.UpdateStorage(a.AddrHash, fresh, uint256.NewInt(uint64(i+1)))
				}
			}
			got, err := next.StateRoot()
			wantNext, _ := rnext.StateRoot()
			if err != nil || got != wantNext {
				t.Fatalf("%v, %d workers: root after more writes %v (%v), want %v", f, workers, got, err, wantNext)
			}
			db.Close()
		}
		for _, w := range []int{2, 4} {
			if len(records[1]) != len(records[w]) {
				t.Fatalf("%v: %d records with 1 worker, %d with %d", f, len(records[1]), len(records[w]), w)
			}
			for id, rec := range records[1] {
				if !bytes.Equal(rec, records[w][id]) {
					t.Fatalf("%v: record %d differs between 1 and %d workers", f, id, w)
				}
			}
		}
	}
}

// insertAccountLeaves writes accs into fr one by one, the reference a bulk load
// is compared with.
func insertAccountLeaves(t *testing.T, fr *trie.Frame, accs []trie.AccountLeaf) {
	t.Helper()
	for _, a := range accs {
		if err := fr.UpdateAccount(a.AddrHash, a.Account); err != nil {
			t.Fatal(err)
		}
		for _, s := range a.Storage {
			if err := fr.UpdateStorage(a.AddrHash, s.Hash, &s.Value); err != nil {
				t.Fatal(err)
			}
		}
	}
}
