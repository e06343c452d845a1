package trietest

// Corrupt-record and format-mismatch tests that run on every store (from trie/badinput_test.go).

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// Garbage is a set of bad vertex records: empty, a reserved tag, random bytes,
// a good record truncated and a good record with a trailing byte.
func Garbage(good []byte) map[string][]byte {
	r := rand.New(rand.NewPCG(7, 7))
	random := make([]byte, 48)
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	random[0] = 0xe7 // reserved tag bits: never a valid record
	return map[string][]byte{
		"empty":     {},
		"reserved":  {0xff},
		"random":    random,
		"truncated": good[:len(good)-1],
		"trailing":  append(slices.Clone(good), 0),
	}
}

// BadVertexRecord overwrites live vertices with garbage through the
// backend's Write and checks that reads, hashing and opening the DB report an
// error wrapping vertex.ErrCorrupt (with a *vertex.CorruptError) instead of
// panicking or returning wrong data.
func BadVertexRecord(t *testing.T, stores ...Opener) {
	if InvariantChecks {
		t.Skip("writes through damaged records, which the invariants build's check after every write reports by panicking")
	}
	Each(t, stores, func(t *testing.T, s *Store, f vertex.Format) {
		db := s.Open(f)
		m, root := BuildKeys(t, db, 600)
		db.Close()

		// Pick a leaf below the root and a branch below the root.
		var leaf, branch vertex.ID
		var leafKey int
		var recs map[vertex.ID][]byte
		s.Raw(func(b trie.Backend) {
			recs = Records(t, b)
			for id, v := range Reachable(t, recs) {
				switch {
				case id == vertex.RootID:
				case v.Kind == vertex.Leaf && (leaf == 0 || id < leaf):
					leaf = id
				case v.Kind == vertex.Branch && (branch == 0 || id < branch):
					branch = id
				}
			}
			v, _ := vertex.Decode(recs[leaf])
			for i := range m {
				if bytes.Equal(m[i], v.Value) {
					leafKey = i
				}
			}
		})
		if leaf == 0 || branch == 0 {
			t.Fatalf("no leaf or branch below the root")
		}

		for name, bad := range Garbage(recs[leaf]) {
			t.Run("leaf/"+name, func(t *testing.T) {
				corrupt(t, s, leaf, bad)
				defer corrupt(t, s, leaf, recs[leaf])
				db := s.Open(f)
				fr := db.Begin()
				_, err := G(fr).Get(GenKey(leafKey))
				WantCorrupt(t, err, "Get of the corrupt leaf's key")
				// Changing a key beside it and hashing must read the corrupt
				// record (a sibling's key is needed) and fail the same way.
				fr2 := db.Begin()
				if err := G(fr2).Put(append(GenKey(leafKey), 0x01), []byte("new")); err != nil {
					WantCorrupt(t, err, "Put beside the corrupt leaf")
				} else {
					_, err := G(fr2).Hash()
					WantCorrupt(t, err, "Hash after a Put beside the corrupt leaf")
				}
				_, err = G(fr).Prove(GenKey(leafKey))
				WantCorrupt(t, err, "Prove of the corrupt leaf's key")
				db.Close()
			})
		}
		for name, bad := range Garbage(recs[branch]) {
			t.Run("branch/"+name, func(t *testing.T) {
				corrupt(t, s, branch, bad)
				defer corrupt(t, s, branch, recs[branch])
				db := s.Open(f)
				// Some key lies below the branch; reading every key must hit it.
				var firstErr error
				for i := range m {
					if _, err := G(db.Begin()).Get(GenKey(i)); err != nil {
						firstErr = err
						break
					}
				}
				WantCorrupt(t, firstErr, "Get below the corrupt branch")
				it := G(db.Begin()).Iterator(nil)
				for it.Next() {
				}
				WantCorrupt(t, it.Err(), "iterating over the corrupt branch")
				db.Close()
			})
		}
		t.Run("root", func(t *testing.T) {
			corrupt(t, s, vertex.RootID, []byte{0x02, 0xff})
			b := s.Backend()
			db, err := trie.Open(b, &trie.Options{Format: f})
			if err == nil {
				db.Close()
			} else {
				b.Close()
			}
			WantCorrupt(t, err, "Open with a corrupt root vertex")
		})
		// Restoring the records makes the database whole again.
		s.Raw(func(b trie.Backend) {
			var puts []vertex.Record
			for _, id := range []vertex.ID{vertex.RootID, leaf, branch} {
				puts = append(puts, vertex.Record{ID: id, Rec: recs[id]})
			}
			Must(t, b.Write(&vertex.Batch{Puts: puts}), "restoring")
		})
		db = s.Open(f)
		if got := DBRoot(t, db); got != root {
			t.Fatalf("root after restoring = %v, want %v", got, root)
		}
		CheckKeys(t, db.Begin(), m, 600)
	})
}

func corrupt(t *testing.T, s *Store, id vertex.ID, rec []byte) {
	t.Helper()
	s.Raw(func(b trie.Backend) {
		Must(t, b.Write(&vertex.Batch{Puts: []vertex.Record{{ID: id, Rec: rec}}}), "writing garbage into vertex %d", id)
	})
}

func WantCorrupt(t *testing.T, err error, what string) {
	t.Helper()
	var ce *vertex.CorruptError
	switch {
	case err == nil:
		t.Errorf("%s: no error, want one wrapping vertex.ErrCorrupt", what)
	case !errors.Is(err, vertex.ErrCorrupt):
		t.Errorf("%s: %v, want an error wrapping vertex.ErrCorrupt", what, err)
	case !errors.As(err, &ce):
		t.Errorf("%s: %v does not wrap a *vertex.CorruptError", what, err)
	}
}

// AdminRecord builds an admin record (revision 2) as docs/format.md lays it out.
func AdminRecord(f vertex.Format, r vertex.Records, top vertex.ID, block uint64, root hashkey.Hash) []byte {
	return adminRecord([]byte{byte(f), byte(r)}, top, block, root)
}

// AdminRecordV1 builds a revision-1 admin record, which names no record
// variant, as docs/format.md lays it out.
func AdminRecordV1(f vertex.Format, top vertex.ID, block uint64, root hashkey.Hash) []byte {
	return adminRecord([]byte{byte(f)}, top, block, root)
}

func adminRecord(head []byte, top vertex.ID, block uint64, root hashkey.Hash) []byte {
	b := append([]byte("hxst"), head...)
	b = binary.BigEndian.AppendUint64(b, uint64(top))
	b = binary.BigEndian.AppendUint64(b, block)
	b = append(b, root[:]...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
}

// BadAdminRecord writes broken admin records and checks Open refuses them
// with ErrCorruptAdmin, leaving the record as it was.
func BadAdminRecord(t *testing.T, stores ...Opener) {
	Each(t, stores, func(t *testing.T, s *Store, f vertex.Format) {
		db := s.Open(f)
		_, root := BuildKeys(t, db, 300)
		db.Close()
		var good []byte
		s.Raw(func(b trie.Backend) {
			var err error
			good, err = b.Admin()
			Must(t, err, "Admin")
		})
		top := vertex.ID(binary.BigEndian.Uint64(good[6:14]))
		r := vertex.DefaultRecords
		if rebuilt := AdminRecord(f, r, top, 1, root); !bytes.Equal(rebuilt, good) {
			t.Fatalf("admin record %x does not follow the documented layout (%x)", good, rebuilt)
		}
		flip := func(i int) []byte { b := slices.Clone(good); b[i] ^= 0x40; return b }
		cases := map[string][]byte{
			"empty":          {},
			"truncated":      good[:20],
			"one short":      good[:len(good)-1],
			"one long":       append(slices.Clone(good), 0),
			"magic":          flip(0),
			"bad crc":        flip(len(good) - 1),
			"flipped block":  flip(15),
			"flipped root":   flip(30),
			"wrong root":     AdminRecord(f, r, top, 1, hashkey.Keccak256([]byte("not the root"))),
			"empty root":     AdminRecord(f, r, top, 1, hashkey.EmptyRoot),
			"format 0 crc":   AdminRecord(0, r, top, 1, root),
			"format 200 crc": AdminRecord(200, r, top, 1, root),
			"records 0 crc":  AdminRecord(f, 0, top, 1, root),
			"records 9 crc":  AdminRecord(f, 9, top, 1, root),
			"v1 wrong root":  AdminRecordV1(f, top, 1, hashkey.Keccak256([]byte("not the root"))),
		}
		for name, bad := range cases {
			t.Run(name, func(t *testing.T) {
				s.Raw(func(b trie.Backend) {
					Must(t, b.Write(&vertex.Batch{Admin: bad}), "writing admin")
				})
				b := s.Backend()
				db, err := trie.Open(b, &trie.Options{Format: f})
				if err == nil {
					db.Close()
					t.Fatalf("Open accepted admin record %x", bad)
				}
				var fe *trie.FormatError
				var re *trie.RecordsError
				if !errors.Is(err, trie.ErrCorruptAdmin) && !(errors.As(err, &fe) && bad[4] != byte(f)) && !(errors.As(err, &re) && !re.Found.Valid()) {
					t.Errorf("Open: %v, want ErrCorruptAdmin", err)
				}
				after, aerr := b.Admin()
				b.Close()
				Must(t, aerr, "Admin")
				if !bytes.Equal(after, bad) {
					t.Errorf("failed Open rewrote the admin record: %x -> %x", bad, after)
				}
			})
		}
		s.Raw(func(b trie.Backend) {
			Must(t, b.Write(&vertex.Batch{Admin: good}), "restoring admin")
		})
		db = s.Open(f)
		if got := DBRoot(t, db); got != root {
			t.Fatalf("root after restoring the admin record = %v, want %v", got, root)
		}
	})
}

// FormatMismatch opens a database of each format as the other and checks
// the *FormatError, and that nothing was written.
func FormatMismatch(t *testing.T, stores ...Opener) {
	for _, o := range stores {
		kind := o.Name
		for _, f := range Formats {
			other := vertex.FormatV1
			if f == vertex.FormatV1 {
				other = vertex.FormatV2
			}
			t.Run(kind+"/"+f.String()+"-as-"+other.String(), func(t *testing.T) {
				s := NewStore(t, o)
				db := s.Open(f)
				m, root := BuildKeys(t, db, 200)
				db.Close()
				var admin []byte
				var recs map[vertex.ID][]byte
				s.Raw(func(b trie.Backend) {
					admin, _ = b.Admin()
					recs = Records(t, b)
				})

				b := s.Backend()
				db2, err := trie.Open(b, &trie.Options{Format: other})
				var fe *trie.FormatError
				if err == nil {
					db2.Close()
					t.Fatalf("a %v database opened as %v", f, other)
				}
				if !errors.As(err, &fe) || fe.Found != f || fe.Want != other {
					t.Fatalf("Open: %v (%T), want *FormatError{Found: %v, Want: %v}", err, err, f, other)
				}
				b.Close()
				s.Raw(func(b trie.Backend) {
					a, _ := b.Admin()
					if !bytes.Equal(a, admin) {
						t.Errorf("refused Open changed the admin record")
					}
					if got := Records(t, b); len(got) != len(recs) {
						t.Errorf("refused Open changed the records: %d -> %d", len(recs), len(got))
					}
				})
				// The default (zero) format means the latest.
				if f != vertex.Latest {
					b := s.Backend()
					if db, err := trie.Open(b, nil); !errors.As(err, &fe) || fe.Found != f {
						if err == nil {
							db.Close()
						}
						t.Errorf("Open(nil options) of a %v database: %v, want *FormatError", f, err)
					}
					b.Close()
				}
				db = s.Open(f)
				if got := DBRoot(t, db); got != root {
					t.Fatalf("root after refused opens = %v, want %v", got, root)
				}
				CheckKeys(t, db.Begin(), m, 200)
			})
		}
	}
}

// FailedOpenWritesNothing: an Open refused for an invalid format must not
// create the admin record of an empty store.
func FailedOpenWritesNothing(t *testing.T, stores ...Opener) {
	for _, o := range stores {
		kind := o.Name
		t.Run(kind, func(t *testing.T) {
			s := NewStore(t, o)
			for _, f := range []vertex.Format{3, 200} {
				b := s.Backend()
				db, err := trie.Open(b, &trie.Options{Format: f})
				var fe *trie.FormatError
				if err == nil {
					db.Close()
					t.Fatalf("Open with format %d succeeded", f)
				}
				if !errors.As(err, &fe) {
					t.Errorf("Open with format %d: %v, want *FormatError", f, err)
				}
				a, err := b.Admin()
				Must(t, err, "Admin")
				if a != nil {
					t.Errorf("refused Open with format %d wrote admin record %x", f, a)
				}
				b.Close()
			}
		})
	}
}
