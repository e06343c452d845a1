package trie_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/hexstate/hexstate/internal/trietest"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// TestChildKeyStoreReadable: a store written with children's keys in its
// branch records and a revision-1 admin record (as the code before record
// variants wrote it) opens with either variant; blocks on it re-hash
// branches whose records carry copies next to ones that do not, and every
// root is right, before and after a reopen, which then follows the variant
// the persists recorded.
func TestChildKeyStoreReadable(t *testing.T) {
	for _, f := range trietest.Formats {
		for _, open := range []vertex.Records{0, vertex.KeysOnce} {
			t.Run(f.String()+"/"+open.String(), func(t *testing.T) {
				s := trietest.NewStore(t, trietest.Memory)
				s.Records = vertex.ChildKeyCopies
				db := s.Open(f)
				m := trietest.Genesis(t, db, 3000)
				legacyAdmin(t, db, s.Backend())
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
				s.Records = open
				db = s.Open(f)
				want := open
				if open == 0 {
					want = vertex.ChildKeyCopies
				}
				if db.Records() != want {
					t.Fatalf("revision-1 store opened with %v: %v, want %v", open, db.Records(), want)
				}
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
				s.Records = 0
				db = s.Reopen(db, f)
				if db.Records() != want {
					t.Fatalf("reopened: %v, want %v (recorded by the persists)", db.Records(), want)
				}
				trietest.CheckRoot(t, db.Begin(), f, m, "reopened")
				trietest.CheckState(t, db.Begin(), m)
			})
		}
	}
}

// TestRecordsFollowStore: a database follows the variant its admin record
// names when Options.Records is 0, refuses another with a *RecordsError
// (writing nothing), and a revision-1 admin record (no variant) takes the
// requested variant or children's keys for 0.
func TestRecordsFollowStore(t *testing.T) {
	for _, f := range trietest.Formats {
		t.Run(f.String(), func(t *testing.T) {
			for _, made := range []vertex.Records{vertex.KeysOnce, vertex.ChildKeyCopies} {
				s := trietest.NewStore(t, trietest.Memory)
				s.Records = made
				db := s.Open(f)
				trietest.Genesis(t, db, 200)
				trietest.Must(t, db.Close(), "Close")
				s.Records = 0
				db = s.Open(f)
				if db.Records() != made {
					t.Errorf("made %v, opened with 0: %v", made, db.Records())
				}
				trietest.Must(t, db.Close(), "Close")
				b := s.Backend()
				before, _ := b.Admin()
				other := vertex.KeysOnce + vertex.ChildKeyCopies - made
				_, err := trie.Open(b, &trie.Options{Format: f, Records: other})
				var re *trie.RecordsError
				if !errors.As(err, &re) || re.Found != made || re.Want != other {
					t.Fatalf("made %v, opened as %v: %v, want a *RecordsError", made, other, err)
				}
				if after, _ := b.Admin(); !bytes.Equal(after, before) {
					t.Fatalf("a refused Open rewrote the admin record")
				}
				if _, err := trie.Open(b, &trie.Options{Format: f, Records: 7}); !errors.As(err, &re) || re.Want != 7 {
					t.Fatalf("Records 7: %v, want a *RecordsError", err)
				}
			}
		})
	}
}

// legacyAdmin rewrites the admin record of the store behind b as revision 1.
func legacyAdmin(t *testing.T, db *trie.DB, b trie.Backend) {
	trietest.Must(t, db.Flush(), "Flush") // the background write brings an admin record too
	root := trietest.DBRoot(t, db)
	top, block := trietest.AdminTop(t, b), db.Block()
	trietest.Must(t, b.Write(&vertex.Batch{Admin: trietest.AdminRecordV1(db.Format(), top, block, root)}), "writing a revision-1 admin record")
}
