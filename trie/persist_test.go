package trie_test

import (
	"testing"

	"github.com/hexstate/hexstate/internal/trietest"
)

// This file checks what survives a persist, a close and a reopen, on the memory
// and RocksDB backends in both formats: the root (read from the stored keys, not
// recomputed), every key and account, deletions (gone from the backend, not just
// unreachable), the vertex cache, and that format v2 reads a branch's children
// with one range read. Those tests, and the generic-key helpers, are in
// internal/trietest (persist.go, generic.go); this file keeps the memory-only one.

// TestPersistChildKeys: with children's keys in branch records, a
// cold reopened DB re-hashes an update by reading only the updated paths, in
// both layouts: fewer reads than without them (v2: siblings in one range read
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
			fr := db.Begin()
			for i := 0; i < 300; i++ {
				if err := trietest.G(fr).Put(trietest.GenKey(i*13%4000), []byte("changed")); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := trietest.G(fr).Hash(); err != nil {
				t.Fatal(err)
			}
			d := db.BackendStats()
			reads[noChild] = d.PointReads + d.RangeReads - before.PointReads - before.RangeReads
		}
		t.Logf("%v: %d reads with children's keys, %d without", f, reads[false], reads[true])
		if reads[false]*10 > reads[true]*7 {
			t.Fatalf("%v: children's keys saved too little: %d reads with, %d without", f, reads[false], reads[true])
		}
	}
}
