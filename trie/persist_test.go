package trie_test

import (
	"testing"

	"github.com/hexstate/hexstate/internal/trietest"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// This file checks what survives a persist, a close and a reopen, on the memory
// and RocksDB backends in both formats: the root (read from the stored keys, not
// recomputed), every key and account, deletions (gone from the backend, not just
// unreachable), the vertex cache, and that format v2 reads a branch's children
// with one range read. Those tests, and the generic-key helpers, are in
// internal/trietest (persist.go, generic.go); this file keeps the memory-only one.

// updateAndHash changes 300 of the 4000 keys trietest.BuildKeys wrote, in a
// new frame on db, and hashes it.
func updateAndHash(t *testing.T, db *trie.DB) {
	t.Helper()
	fr := db.Begin()
	for i := 0; i < 300; i++ {
		trietest.Must(t, trietest.G(fr).Put(trietest.GenKey(i*13%4000), []byte("changed")), "Put")
	}
	_, err := trietest.G(fr).Hash()
	trietest.Must(t, err, "Hash")
}

// TestPersistChildKeys: with children's keys in branch records, a
// cold reopened DB re-hashes an update by reading only the updated paths, in
// both layouts: fewer reads than without them (v2: siblings in one group read
// per branch; v1: one point read per sibling).
func TestPersistChildKeys(t *testing.T) {
	if trietest.InvariantChecks {
		t.Skip("counts backend reads, which the invariants build's checks add to")
	}
	for _, f := range trietest.Formats {
		reads := map[bool]uint64{}
		for _, noChild := range []bool{false, true} {
			s := trietest.NewStore(t, trietest.Memory)
			s.Records = trietest.RecordsOf(noChild)
			db := s.Open(f)
			trietest.BuildKeys(t, db, 4000)
			db.Close()
			db = s.Open(f)
			before := db.BackendStats()
			updateAndHash(t, db)
			d := db.BackendStats()
			reads[noChild] = d.Reads() - before.Reads()
		}
		t.Logf("%v: %d reads with children's keys, %d without", f, reads[false], reads[true])
		if reads[false]*10 > reads[true]*7 {
			t.Fatalf("%v: children's keys saved too little: %d reads with, %d without", f, reads[false], reads[true])
		}
	}
}

// TestPersistCachesChildKeys: with keys once, the store gets each key once
// but the vertex cache keeps the branches a persist wrote with their
// children's keys, so re-hashing updates to them on the same DB looks up no
// more vertices than a cold DB whose records all carry their children's keys
// (the updated paths), not their siblings too.
func TestPersistCachesChildKeys(t *testing.T) {
	// lookups opens a store of 4000 keys with records, on which it updates
	// 300 keys and re-hashes, warm (on the DB that persisted them) or cold
	// (reopened), and returns the cache's lookups (hits and misses) the
	// update and hash made.
	lookups := func(f vertex.Format, records vertex.Records, cold bool) uint64 {
		s := trietest.NewStore(t, trietest.Memory)
		s.Records = records
		db := s.Open(f)
		trietest.BuildKeys(t, db, 4000)
		trietest.Must(t, db.Flush(), "Flush")
		if cold {
			db = s.Reopen(db, f)
		}
		before := db.CacheStats()
		updateAndHash(t, db)
		d := db.CacheStats()
		return d.Hits + d.Misses - before.Hits - before.Misses
	}
	for _, f := range trietest.Formats {
		warm := lookups(f, trietest.RecordsOf(true), false)
		copies := lookups(f, trietest.RecordsOf(false), true)
		t.Logf("%v: %d lookups after the persist, %d cold with children's keys stored", f, warm, copies)
		if warm > copies {
			t.Fatalf("%v: %d lookups re-hashing on the persisting DB, %d on a cold one with children's keys stored: the cache lost the children's keys", f, warm, copies)
		}
	}
}
