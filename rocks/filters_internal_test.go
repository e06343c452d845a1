package rocks

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/hexstate/hexstate/internal/trietest"
	"github.com/hexstate/hexstate/trie"
)

// TestVertexLastLevelHasNoFilters: a bulk load's persist, ingested at the
// last level, leaves the vertex column family's files without filter blocks
// (its reads are always of IDs it holds), while the leaf index's keep theirs
// (a lookup of an absent account must not read a data block). (Files that a
// compaction only moves down keep what they were written with.)
func TestVertexLastLevelHasNoFilters(t *testing.T) {
	filterBytes := func(t *testing.T, s *Store, cf string) int {
		t.Helper()
		h := s.cfVertex
		if cf == cfLeaves {
			h = s.cfLeaves
		}
		p := s.db.GetPropertyCF("rocksdb.aggregated-table-properties", h)
		m := regexp.MustCompile(`filter block size=(\d+)`).FindStringSubmatch(p)
		if m == nil {
			t.Fatalf("no filter block size in the %s family's table properties: %q", cf, p)
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	st, err := Open(t.TempDir(), &Options{IngestBytes: 1})
	trietest.Must(t, err, "Open")
	db, err := trie.Open(st, nil)
	trietest.Must(t, err, "trie.Open")
	defer db.Close()
	accts := trietest.StateAccounts(20000, 3)
	fr := db.Begin()
	trietest.Must(t, fr.BulkLoadAccounts(accts), "BulkLoadAccounts")
	trietest.Must(t, db.Persist(fr, 0), "Persist")
	trietest.Must(t, db.Flush(), "Flush")
	if n := filterBytes(t, st, cfVertices); n != 0 {
		t.Errorf("the vertex family's files hold %d bytes of filters after the build, want none", n)
	}
	if n := filterBytes(t, st, cfLeaves); n == 0 {
		t.Errorf("the leaf index's files hold no filters after the build")
	}
	if _, ok, err := db.Begin().Account(accts[17].AddrHash); err != nil || !ok {
		t.Fatalf("Account after the build: %v, %v", ok, err)
	}
}
