package trie_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/internal/trietest"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// checkIndex runs DB.Check (which compares the leaf index with the trie) and
// fails on any violation; it returns the number of index entries.
func checkIndex(t *testing.T, db *trie.DB, when string) uint64 {
	t.Helper()
	rep, err := db.Check(context.Background(), nil)
	trietest.Must(t, err, "Check %s", when)
	if !rep.OK() {
		t.Fatalf("Check %s: %v", when, rep.Err())
	}
	return rep.LeafEntries
}

// TestLeafIndexFollowsBlocks runs random blocks (account updates and
// deletions, slot writes and zeroings) persisted at random cadences on a
// database with a one-byte cache, so that reads are cold and answered by the
// index: every read must match the model, and after every persist the index
// must hold exactly the trie's leaves.
func TestLeafIndexFollowsBlocks(t *testing.T) {
	for _, f := range formats {
		mem := trie.NewMemoryBackend()
		db, err := trie.Open(mem, &trie.Options{Format: f, CacheBytes: 1})
		trietest.Must(t, err, "Open")
		if !db.HasLeafIndex() {
			t.Fatal("a new database has no leaf index")
		}
		st := newBlockState()
		r := rand.New(rand.NewPCG(uint64(f), 9))
		fr := db.Begin()
		for b := 1; b <= 30; b++ {
			st.Apply(t, fr, r, b, 40)
			if r.IntN(3) == 0 || b == 30 {
				trietest.Must(t, db.Persist(fr, uint64(b)), "Persist(%d)", b)
				checkIndex(t, db, "after a persist")
				st.Check(t, fr, nil)
			}
			fr = fr.Begin()
		}
		before := db.LookupStats()
		db.Close()
		db, err = trie.Open(mem, &trie.Options{Format: f, CacheBytes: 1})
		trietest.Must(t, err, "reopen")
		st.Check(t, db.Begin(), nil)
		ls := db.LookupStats()
		if ls.Cold == 0 || ls.ColdKeys != ls.Cold {
			t.Fatalf("cold reads %+v (before reopen %+v): want every lookup cold, one key each", ls, before)
		}
		db.Close()
	}
}

// TestLeafIndexAbsent: a store without an index (as written before the index
// existed) reads through the trie, its persists write no entries, and
// BuildLeafIndex builds an index the check accepts.
func TestLeafIndexAbsent(t *testing.T) {
	mem, st, r := persistedBlock(t, 1, 100)
	trietest.Must(t, mem.Write(&vertex.Batch{LeafReset: true}), "dropping the index")

	db, err := trie.Open(mem, &trie.Options{CacheBytes: 1})
	trietest.Must(t, err, "Open without index")
	if db.HasLeafIndex() {
		t.Fatal("HasLeafIndex on a store without one")
	}
	fr := db.Begin()
	st.Check(t, fr, nil)
	if ls := db.LookupStats(); ls.ColdKeys <= ls.Cold {
		t.Fatalf("without an index cold reads took %d keys for %d lookups: want the trie's paths", ls.ColdKeys, ls.Cold)
	}
	st.Apply(t, fr, r, 2, 40)
	trietest.Must(t, db.Persist(fr, 2), "Persist")
	trietest.Must(t, db.Flush(), "Flush")
	n := 0
	mem.EachLeaf(nil, func(k, v []byte) error { n++; return nil })
	if n != 0 {
		t.Fatalf("a persist without index wrote %d entries", n)
	}
	// What a build cut short leaves (entries, no marker): the next build
	// starts over, and the stale entry is gone.
	stale := bytes.Repeat([]byte{0xee}, 32)
	trietest.Must(t, mem.Write(&vertex.Batch{Leaves: []vertex.LeafEntry{{Key: stale, Val: []byte{0x60, 0}}}}), "a stale entry")
	entries, err := db.BuildLeafIndex(context.Background())
	trietest.Must(t, err, "BuildLeafIndex")
	if got := checkIndex(t, db, "after the build"); got != entries || entries == 0 {
		t.Fatalf("built %d entries, check counted %d", entries, got)
	}
	fr = fr.Begin()
	st.Apply(t, fr, r, 3, 40)
	trietest.Must(t, db.Persist(fr, 3), "Persist")
	checkIndex(t, db, "after a persist on the built index")
	st.Check(t, fr, nil)
}

// TestCheckFindsLeafIndexDamage: an extra entry, a missing one and a wrong
// value are each reported.
func TestCheckFindsLeafIndexDamage(t *testing.T) {
	mem := trie.NewMemoryBackend()
	db, _ := trie.Open(mem, nil)
	fr := db.Begin()
	st := newBlockState()
	st.Apply(t, fr, rand.New(rand.NewPCG(3, 4)), 1, 50)
	trietest.Must(t, db.Persist(fr, 1), "Persist")
	checkIndex(t, db, "before damage")
	var some []byte
	mem.EachLeaf(nil, func(k, v []byte) error {
		if len(k) == 32 && some == nil {
			some = append([]byte(nil), k...)
		}
		return nil
	})
	ghost := hashkey.Keccak256([]byte("ghost"))
	for name, b := range map[string]*vertex.Batch{
		"no such account": {Leaves: []vertex.LeafEntry{{Key: ghost[:], Val: []byte{0x09, 1, 0x20, 0}}}},
		"missing":         {Leaves: []vertex.LeafEntry{{Key: some}}},
		"value":           {Leaves: []vertex.LeafEntry{{Key: some, Val: []byte{0x09, 1, 0x20, 1, 1, 7}}}},
	} {
		saved, _ := mem.Leaf(some)
		trietest.Must(t, mem.Write(b), "damaging")
		rep, err := db.Check(context.Background(), nil)
		trietest.Must(t, err, "Check")
		if rep.OK() || !strings.Contains(rep.Err().Error(), name) {
			t.Errorf("%s: check says %v", name, rep.Err())
		}
		trietest.Must(t, mem.Write(&vertex.Batch{Leaves: []vertex.LeafEntry{{Key: ghost[:]}, {Key: some, Val: saved}}}), "repairing")
	}
	checkIndex(t, db, "after repair")
}

// TestPrefetch: after Prefetch on a parent frame with a cold cache, reads of
// the prefetched accounts and slots on its child read nothing from the
// backend, and the values are right.
func TestPrefetch(t *testing.T) {
	mem, st, _ := persistedBlock(t, 5, 200)
	db, _ := trie.Open(mem, nil)
	parent := db.Begin()
	child := parent.Begin()
	accts, slots := blockKeys()
	before := mem.Stats()
	trietest.Must(t, parent.Prefetch(accts, slots), "Prefetch")
	if got := mem.Stats().PointReads - before.PointReads; got == 0 {
		t.Fatal("Prefetch read nothing on a cold cache")
	}
	ls := db.LookupStats()
	st.Check(t, child, nil)
	if d := db.LookupStats(); d.Cold != ls.Cold || d.Lookups == ls.Lookups {
		t.Fatalf("after Prefetch %d of %d lookups were cold", d.Cold-ls.Cold, d.Lookups-ls.Lookups)
	}
}

// TestPrefetchReadsGroups: with keys once in v2 (the defaults), Prefetch
// reads each cold vertex of the paths with its slot group, so that hashing
// writes to the prefetched accounts makes no group read of a branch's
// children, although their siblings (the other accounts) were not
// prefetched, and no point read of the storage roots of the contracts among
// those siblings either.
func TestPrefetchReadsGroups(t *testing.T) {
	mem, _, _ := persistedBlock(t, 9, 200)
	db, _ := trie.Open(mem, nil)
	fr := db.Begin()
	var accts []hashkey.Hash
	for a := 0; a < 200; a += 10 {
		accts = append(accts, trietest.BlockAddr(a))
	}
	before := mem.Stats()
	trietest.Must(t, fr.Prefetch(accts, nil), "Prefetch")
	if got := mem.Stats().BatchReads - before.BatchReads; got == 0 {
		t.Fatal("Prefetch read no slot group")
	}
	written := 0
	for _, a := range accts {
		acc, ok, err := fr.Account(a)
		trietest.Must(t, err, "Account")
		if ok {
			acc.Nonce++
			trietest.Must(t, fr.UpdateAccount(a, acc), "UpdateAccount")
			written++
		}
	}
	if written == 0 {
		t.Fatal("none of the prefetched accounts exists")
	}
	before = mem.Stats()
	_, err := fr.StateRoot()
	trietest.Must(t, err, "StateRoot")
	if d := mem.Stats(); d.RangeReads+d.BatchReads != before.RangeReads+before.BatchReads {
		t.Fatalf("the hash after Prefetch made %d group reads of children", d.RangeReads+d.BatchReads-before.RangeReads-before.BatchReads)
	}
	if got := mem.Stats().PointReads - before.PointReads; got != 0 {
		t.Fatalf("the hash after Prefetch made %d point reads (storage roots of the contracts beside the written accounts)", got)
	}
}

// TestPrefetchReads: index entries read ahead answer the reads that follow
// without backend reads, and a persist that lands drops them (the reads
// after it see the new values).
func TestPrefetchReads(t *testing.T) {
	mem, st, r := persistedBlock(t, 7, 200)
	db, _ := trie.Open(mem, &trie.Options{CacheBytes: 1})
	parent := db.Begin()
	child := parent.Begin()
	accts, slots := blockKeys()
	trietest.Must(t, parent.PrefetchReads(accts, slots), "PrefetchReads")
	before := mem.Stats().LeafReads
	if before < uint64(len(accts)+len(slots)) {
		t.Fatalf("PrefetchReads read %d index keys for %d keys", before, len(accts)+len(slots))
	}
	st.Check(t, child, nil)
	if got := mem.Stats().LeafReads; got != before {
		t.Fatalf("reads after PrefetchReads read %d index keys", got-before)
	}
	st.Apply(t, child, r, 2, 100)
	trietest.Must(t, db.Persist(child, 2), "Persist")
	trietest.Must(t, db.Flush(), "Flush")
	st.Check(t, child.Begin(), nil)
	if got := mem.Stats().LeafReads; got == before {
		t.Fatal("reads after a persist landed were answered by entries read before it")
	}
}

// blockKeys returns every account and slot key BlockState may use.
func blockKeys() (accts []hashkey.Hash, slots []trie.StorageKey) {
	for a := range 200 {
		accts = append(accts, trietest.BlockAddr(a))
		for j := range 40 {
			slots = append(slots, trie.StorageKey{Account: trietest.BlockAddr(a), Slot: trietest.BlockSlot(j)})
		}
	}
	return accts, slots
}

// persistedBlock returns a memory backend holding block 1 of n random
// account operations drawn from seed, its model and the random source.
func persistedBlock(t *testing.T, seed uint64, n int) (trie.Backend, *trietest.BlockState, *rand.Rand) {
	t.Helper()
	mem := trie.NewMemoryBackend()
	db, err := trie.Open(mem, nil)
	trietest.Must(t, err, "Open")
	st := newBlockState()
	r := rand.New(rand.NewPCG(seed, seed+1))
	fr := db.Begin()
	st.Apply(t, fr, r, 1, n)
	trietest.Must(t, db.Persist(fr, 1), "Persist")
	trietest.Must(t, db.Close(), "Close")
	return mem, st, r
}
