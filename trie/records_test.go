package trie_test

import (
	"testing"

	"github.com/hexstate/hexstate/internal/trietest"
	"github.com/hexstate/hexstate/vertex"
)

// TestChildKeyStoreReadable: a store written with children's keys in its
// branch records (vertex.ChildKeyCopies, what the default wrote before keys
// once) is opened without them; blocks on it re-hash branches whose records
// carry copies next to ones that do not, and every root is right, before and
// after a reopen.
func TestChildKeyStoreReadable(t *testing.T) {
	for _, f := range trietest.Formats {
		t.Run(f.String(), func(t *testing.T) {
			s := trietest.NewStore(t, trietest.Memory)
			s.Records = vertex.ChildKeyCopies
			db := s.Open(f)
			m := trietest.Genesis(t, db, 3000)
			trietest.Must(t, db.Close(), "Close")
			copies := 0
			for _, rec := range trietest.Records(t, s.Backend()) {
				if v, err := vertex.Decode(rec); err == nil && v.ChildKeys != nil {
					copies++
				}
			}
			if copies == 0 {
				t.Fatal("the store written with children's keys has no branch record carrying them")
			}
			s.Records = vertex.KeysOnce
			db = s.Open(f)
			fr := db.Begin()
			for b := 2; b < 6; b++ {
				fr = fr.Begin()
				for i := b; i < 3000; i += 97 {
					trietest.PutAccount(t, fr, m, trietest.Addr(i), trietest.Acc(uint64(b), uint64(i)))
					if i%5 == 0 {
						trietest.PutSlot(t, fr, m, trietest.Addr(i), trietest.Slot(b), uint64(b))
					}
				}
				trietest.CheckRoot(t, fr, f, m, "block on the child-keys store")
				trietest.Must(t, db.Persist(fr, uint64(b)), "Persist %d", b)
			}
			db = s.Reopen(db, f)
			trietest.CheckRoot(t, db.Begin(), f, m, "reopened")
			trietest.CheckState(t, db.Begin(), m)
		})
	}
}
