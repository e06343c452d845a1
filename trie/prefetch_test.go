package trie_test

import (
	"testing"

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
			if f == vertex.FormatV2 && d.RangeReads == 0 {
				t.Errorf("%v, %d workers: no range read re-hashing a cold keys-once store: %+v", f, workers, d)
			}
			trietest.Must(t, db.Persist(fr, 2), "Persist")
			db = s.Reopen(db, f)
			trietest.CheckState(t, db.Begin(), m)
		}
	}
}
