package trie_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/linxGnu/grocksdb"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/rocks"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// This file feeds hexstate bad input: corrupt vertex and admin records written
// straight into the store, a database of the other format, paths that are not a
// store, and malformed proofs. Every case must give a typed error and no panic.

// biGarbage is a set of bad vertex records: empty, a reserved tag, random bytes,
// a good record truncated and a good record with a trailing byte.
func biGarbage(good []byte) map[string][]byte {
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

// TestBadVertexRecord overwrites live vertices with garbage through the
// backend's Write and checks that reads, hashing and opening the DB report an
// error wrapping vertex.ErrCorrupt (with a *vertex.CorruptError) instead of
// panicking or returning wrong data.
func TestBadVertexRecord(t *testing.T) {
	phEach(t, func(t *testing.T, s *phStore, f vertex.Format) {
		db := s.open(f, 0)
		m, root := phBuild(t, db, 600)
		db.Close()

		// Pick a leaf below the root and a branch below the root.
		var leaf, branch vertex.ID
		var leafKey int
		var recs map[vertex.ID][]byte
		s.raw(func(b trie.Backend) {
			recs = phRecords(t, b)
			for id, v := range phReachable(t, recs) {
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

		for name, bad := range biGarbage(recs[leaf]) {
			t.Run("leaf/"+name, func(t *testing.T) {
				biCorrupt(t, s, leaf, bad)
				defer biCorrupt(t, s, leaf, recs[leaf])
				db := s.open(f, 0)
				fr := db.Begin()
				_, err := trie.G(fr).Get(phKey(leafKey))
				biWantCorrupt(t, err, "Get of the corrupt leaf's key")
				// Changing a key beside it and hashing must read the corrupt
				// record (a sibling's key is needed) and fail the same way.
				fr2 := db.Begin()
				if err := trie.G(fr2).Put(append(phKey(leafKey), 0x01), []byte("new")); err != nil {
					biWantCorrupt(t, err, "Put beside the corrupt leaf")
				} else {
					_, err := trie.G(fr2).Hash()
					biWantCorrupt(t, err, "Hash after a Put beside the corrupt leaf")
				}
				_, err = trie.G(fr).Prove(phKey(leafKey))
				biWantCorrupt(t, err, "Prove of the corrupt leaf's key")
				db.Close()
			})
		}
		for name, bad := range biGarbage(recs[branch]) {
			t.Run("branch/"+name, func(t *testing.T) {
				biCorrupt(t, s, branch, bad)
				defer biCorrupt(t, s, branch, recs[branch])
				db := s.open(f, 0)
				// Some key lies below the branch; reading every key must hit it.
				var firstErr error
				for i := range m {
					if _, err := trie.G(db.Begin()).Get(phKey(i)); err != nil {
						firstErr = err
						break
					}
				}
				biWantCorrupt(t, firstErr, "Get below the corrupt branch")
				it := trie.G(db.Begin()).Iterator(nil)
				for it.Next() {
				}
				biWantCorrupt(t, it.Err(), "iterating over the corrupt branch")
				db.Close()
			})
		}
		t.Run("root", func(t *testing.T) {
			biCorrupt(t, s, vertex.RootID, []byte{0x02, 0xff})
			b := s.backend()
			db, err := trie.Open(b, &trie.Options{Format: f})
			if err == nil {
				db.Close()
			} else {
				b.Close()
			}
			biWantCorrupt(t, err, "Open with a corrupt root vertex")
		})
		// Restoring the records makes the database whole again.
		s.raw(func(b trie.Backend) {
			var puts []vertex.Record
			for _, id := range []vertex.ID{vertex.RootID, leaf, branch} {
				puts = append(puts, vertex.Record{ID: id, Rec: recs[id]})
			}
			phMust(t, b.Write(&vertex.Batch{Puts: puts}), "restoring")
		})
		db = s.open(f, 0)
		if got := phRoot(t, db); got != root {
			t.Fatalf("root after restoring = %v, want %v", got, root)
		}
		phCheckModel(t, db.Begin(), m, 600)
	})
}

func biCorrupt(t *testing.T, s *phStore, id vertex.ID, rec []byte) {
	t.Helper()
	s.raw(func(b trie.Backend) {
		phMust(t, b.Write(&vertex.Batch{Puts: []vertex.Record{{ID: id, Rec: rec}}}), "writing garbage into vertex %d", id)
	})
}

func biWantCorrupt(t *testing.T, err error, what string) {
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

// biAdmin builds an admin record as docs/format.md lays it out.
func biAdmin(f vertex.Format, top vertex.ID, block uint64, root hashkey.Hash) []byte {
	b := []byte("hxst")
	b = append(b, byte(f))
	b = binary.BigEndian.AppendUint64(b, uint64(top))
	b = binary.BigEndian.AppendUint64(b, block)
	b = append(b, root[:]...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
}

// TestBadAdminRecord writes broken admin records and checks Open refuses them
// with ErrCorruptAdmin, leaving the record as it was.
func TestBadAdminRecord(t *testing.T) {
	phEach(t, func(t *testing.T, s *phStore, f vertex.Format) {
		db := s.open(f, 0)
		_, root := phBuild(t, db, 300)
		db.Close()
		var good []byte
		s.raw(func(b trie.Backend) {
			var err error
			good, err = b.Admin()
			phMust(t, err, "Admin")
		})
		top := vertex.ID(binary.BigEndian.Uint64(good[5:13]))
		if rebuilt := biAdmin(f, top, 1, root); !bytes.Equal(rebuilt, good) {
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
			"wrong root":     biAdmin(f, top, 1, hashkey.Keccak256([]byte("not the root"))),
			"empty root":     biAdmin(f, top, 1, hashkey.EmptyRoot),
			"format 0 crc":   biAdmin(0, top, 1, root),
			"format 200 crc": biAdmin(200, top, 1, root),
		}
		for name, bad := range cases {
			t.Run(name, func(t *testing.T) {
				s.raw(func(b trie.Backend) {
					phMust(t, b.Write(&vertex.Batch{Admin: bad}), "writing admin")
				})
				b := s.backend()
				db, err := trie.Open(b, &trie.Options{Format: f})
				if err == nil {
					db.Close()
					t.Fatalf("Open accepted admin record %x", bad)
				}
				var fe *trie.FormatError
				if !errors.Is(err, trie.ErrCorruptAdmin) && !(errors.As(err, &fe) && bad[4] != byte(f)) {
					t.Errorf("Open: %v, want ErrCorruptAdmin", err)
				}
				after, aerr := b.Admin()
				b.Close()
				phMust(t, aerr, "Admin")
				if !bytes.Equal(after, bad) {
					t.Errorf("failed Open rewrote the admin record: %x -> %x", bad, after)
				}
			})
		}
		s.raw(func(b trie.Backend) {
			phMust(t, b.Write(&vertex.Batch{Admin: good}), "restoring admin")
		})
		db = s.open(f, 0)
		if got := phRoot(t, db); got != root {
			t.Fatalf("root after restoring the admin record = %v, want %v", got, root)
		}
	})
}

// TestFormatMismatch opens a database of each format as the other and checks
// the *FormatError, and that nothing was written.
func TestFormatMismatch(t *testing.T) {
	for _, kind := range phKinds {
		for _, f := range phFormats {
			other := vertex.FormatV1
			if f == vertex.FormatV1 {
				other = vertex.FormatV2
			}
			t.Run(kind+"/"+f.String()+"-as-"+other.String(), func(t *testing.T) {
				s := newPhStore(t, kind)
				db := s.open(f, 0)
				m, root := phBuild(t, db, 200)
				db.Close()
				var admin []byte
				var recs map[vertex.ID][]byte
				s.raw(func(b trie.Backend) {
					admin, _ = b.Admin()
					recs = phRecords(t, b)
				})

				b := s.backend()
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
				s.raw(func(b trie.Backend) {
					a, _ := b.Admin()
					if !bytes.Equal(a, admin) {
						t.Errorf("refused Open changed the admin record")
					}
					if got := phRecords(t, b); len(got) != len(recs) {
						t.Errorf("refused Open changed the records: %d -> %d", len(recs), len(got))
					}
				})
				// The default (zero) format means the latest.
				if f != vertex.Latest {
					b := s.backend()
					if db, err := trie.Open(b, nil); !errors.As(err, &fe) || fe.Found != f {
						if err == nil {
							db.Close()
						}
						t.Errorf("Open(nil options) of a %v database: %v, want *FormatError", f, err)
					}
					b.Close()
				}
				db = s.open(f, 0)
				if got := phRoot(t, db); got != root {
					t.Fatalf("root after refused opens = %v, want %v", got, root)
				}
				phCheckModel(t, db.Begin(), m, 200)
			})
		}
	}
}

// TestFailedOpenWritesNothing: an Open refused for an invalid format must not
// create the admin record of an empty store.
func TestFailedOpenWritesNothing(t *testing.T) {
	for _, kind := range phKinds {
		t.Run(kind, func(t *testing.T) {
			s := newPhStore(t, kind)
			for _, f := range []vertex.Format{3, 200} {
				b := s.backend()
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
				phMust(t, err, "Admin")
				if a != nil {
					t.Errorf("refused Open with format %d wrote admin record %x", f, a)
				}
				b.Close()
			}
		})
	}
}

// TestRocksBadPaths opens paths that do not hold a store and checks the typed
// errors, and that nothing was changed or created.
func TestRocksBadPaths(t *testing.T) {
	t.Run("regular file", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "state")
		phMust(t, os.WriteFile(p, []byte("not a database"), 0o644), "WriteFile")
		st, err := rocks.Open(p, nil)
		if err == nil {
			st.Close()
			t.Fatal("rocks.Open of a regular file succeeded")
		}
		var oe *rocks.OpenError
		if !errors.Is(err, rocks.ErrNotDirectory) || !errors.As(err, &oe) {
			t.Fatalf("rocks.Open of a regular file: %v, want ErrNotDirectory in an *OpenError", err)
		}
		if b, _ := os.ReadFile(p); string(b) != "not a database" {
			t.Fatalf("the file was changed: %q", b)
		}
	})
	t.Run("non-rocksdb dir", func(t *testing.T) {
		dir := t.TempDir()
		phMust(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("keep me"), 0o644), "WriteFile")
		phMust(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755), "Mkdir")
		before := biListing(t, dir)
		st, err := rocks.Open(dir, nil)
		if err == nil {
			st.Close()
			t.Fatal("rocks.Open of a non-RocksDB directory succeeded")
		}
		var oe *rocks.OpenError
		if !errors.Is(err, rocks.ErrNotRocksDB) || !errors.As(err, &oe) {
			t.Fatalf("rocks.Open of a non-RocksDB directory: %v, want ErrNotRocksDB in an *OpenError", err)
		}
		if after := biListing(t, dir); after != before {
			t.Fatalf("the directory changed:\n%s\n->\n%s", before, after)
		}
	})
	t.Run("bogus CURRENT", func(t *testing.T) {
		dir := t.TempDir()
		phMust(t, os.WriteFile(filepath.Join(dir, "CURRENT"), []byte("MANIFEST-000042\n"), 0o644), "WriteFile")
		before := biListing(t, dir)
		st, err := rocks.Open(dir, nil)
		if err == nil {
			st.Close()
			t.Fatal("rocks.Open of a broken RocksDB directory succeeded")
		}
		if !errors.Is(err, rocks.ErrNotRocksDB) {
			t.Fatalf("rocks.Open of a broken RocksDB directory: %v, want ErrNotRocksDB", err)
		}
		if after := biListing(t, dir); after != before {
			t.Fatalf("the directory changed:\n%s\n->\n%s", before, after)
		}
	})
	t.Run("locked", func(t *testing.T) {
		dir := t.TempDir()
		st, err := rocks.Open(dir, nil)
		phMust(t, err, "rocks.Open")
		defer st.Close()
		st2, err := rocks.Open(dir, nil)
		if err == nil {
			st2.Close()
			t.Fatal("a store opened twice")
		}
		if !errors.Is(err, rocks.ErrLocked) {
			t.Fatalf("second rocks.Open: %v, want ErrLocked", err)
		}
	})
}

// biListing describes every file under dir: name, size and content hash.
func biListing(t *testing.T, dir string) string {
	t.Helper()
	var out bytes.Buffer
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		h := hashkey.Hash{}
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h = hashkey.Keccak256(b)
		}
		rel, _ := filepath.Rel(dir, p)
		out.WriteString(rel + " " + fi.Mode().String() + " " + h.String()[:18] + "\n")
		return nil
	})
	phMust(t, err, "walking %s", dir)
	return out.String()
}

// biProofTrie is a small trie with long and short keys and values, and keys
// that are prefixes of others, so proofs have hashed and embedded nodes,
// extensions and branch values.
func biProofTrie(t testing.TB) (*trie.Trie, [][]byte) {
	tr := trie.NewTrie()
	var keys [][]byte
	for i := 0; i < 300; i++ {
		k := phKey(i)
		keys = append(keys, k)
		if err := tr.Put(k, phValue(i, 0)); err != nil {
			t.Fatal(err)
		}
	}
	for _, kv := range [][2]string{{"do", "verb"}, {"dog", "puppy"}, {"doge", "coin"}, {"horse", "stallion"}} {
		keys = append(keys, []byte(kv[0]))
		if err := tr.Put([]byte(kv[0]), []byte(kv[1])); err != nil {
			t.Fatal(err)
		}
	}
	return tr, keys
}

// TestVerifyProofMalformed checks VerifyProof on real proofs cut, emptied,
// truncated and bit-flipped: never a panic, and either an error wrapping
// ErrBadProof or, for what still verifies, the true value.
func TestVerifyProofMalformed(t *testing.T) {
	tr, keys := biProofTrie(t)
	root := tr.Hash()
	absent := [][]byte{phKey(5000), []byte("dogs"), []byte("d"), {}, phKey(3)[:31]}
	wantErr := func(what string, key []byte, proof [][]byte) {
		t.Helper()
		got, err := biVerify(root, key, proof)
		if err == nil {
			want, _ := tr.Get(key)
			if !bytes.Equal(got, want) {
				t.Fatalf("%s: accepted with value %q, true value %q", what, got, want)
			}
			t.Fatalf("%s: accepted a damaged proof of %x", what, key)
		}
		if !errors.Is(err, trie.ErrBadProof) {
			t.Fatalf("%s: %v does not wrap ErrBadProof", what, err)
		}
	}
	for _, key := range append(slices.Clone(keys), absent...) {
		proof, err := tr.Prove(key)
		phMust(t, err, "Prove(%x)", key)
		want, _ := tr.Get(key)
		got, err := biVerify(root, key, proof)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("VerifyProof of the real proof of %x = %q, %v; want %q", key, got, err, want)
		}
		wantErr("nil proof", key, nil)
		wantErr("empty proof", key, [][]byte{})
		wantErr("empty node", key, [][]byte{{}})
		wantErr("garbage node", key, [][]byte{{0xde, 0xad, 0xbe, 0xef}})
		wantErr("wrong root", key, proof[1:])
		for i := 1; i < len(proof); i++ {
			// Dropping an inner node loses the path, unless the key is absent
			// and its path leaves the trie above that node: then proof[:i] is
			// still a valid proof of absence, and must say so.
			if got, err := biVerify(root, key, proof[:i]); err == nil && (got != nil || want != nil) {
				t.Fatalf("proof of %x cut to %d of %d nodes accepted with %q", key, i, len(proof), got)
			} else if err != nil && !errors.Is(err, trie.ErrBadProof) {
				t.Fatalf("cut proof: %v does not wrap ErrBadProof", err)
			}
		}
		for i := range proof {
			for _, cut := range []int{0, 1, len(proof[i]) / 2, len(proof[i]) - 1} {
				p := slices.Clone(proof)
				p[i] = proof[i][:cut]
				biVerifyOK(t, tr, root, key, p, "node truncated")
			}
			p := slices.Clone(proof)
			p[i] = slices.Clone(proof[i])
			p[i][len(p[i])/2] ^= 0x01
			biVerifyOK(t, tr, root, key, p, "bit flipped")
		}
	}
}

// biVerifyOK checks VerifyProof's answer on a damaged proof: an error wrapping
// ErrBadProof, or (when the damage did not touch the key's path) the true value.
func biVerifyOK(t *testing.T, tr *trie.Trie, root hashkey.Hash, key []byte, proof [][]byte, what string) {
	t.Helper()
	got, err := biVerify(root, key, proof)
	if err != nil {
		if !errors.Is(err, trie.ErrBadProof) {
			t.Fatalf("%s: %v does not wrap ErrBadProof", what, err)
		}
		return
	}
	if want, _ := tr.Get(key); !bytes.Equal(got, want) {
		t.Fatalf("%s: proof of %x accepted with value %q, true value %q", what, key, got, want)
	}
}

// biVerify calls VerifyProof (a panic fails the test binary with its stack).
func biVerify(root hashkey.Hash, key []byte, proof [][]byte) ([]byte, error) {
	return trie.VerifyProof(root, key, proof)
}

// biPackProof packs a proof into one byte string for the fuzzer: each node as
// a 2-byte big-endian length and its bytes.
func biPackProof(proof [][]byte) []byte {
	var b []byte
	for _, n := range proof {
		b = binary.BigEndian.AppendUint16(b, uint16(len(n)))
		b = append(b, n...)
	}
	return b
}

func biUnpackProof(b []byte) [][]byte {
	var proof [][]byte
	for len(b) >= 2 {
		n := int(binary.BigEndian.Uint16(b))
		b = b[2:]
		n = min(n, len(b))
		proof = append(proof, b[:n])
		b = b[n:]
	}
	return proof
}

// FuzzVerifyProof feeds VerifyProof mutated proofs. With mode even the root is
// the real trie's, so anything accepted must give the key's true value (a
// mismatch is a forged proof); with mode odd the root is the hash of the first
// proof node, so the fuzzer controls the whole proof, and VerifyProof must just
// not panic and wrap ErrBadProof in its errors.
//
//	go test -run '^$' -fuzz FuzzVerifyProof -fuzztime 60s ./trie/
func FuzzVerifyProof(f *testing.F) {
	tr, keys := biProofTrie(f)
	root := tr.Hash()
	for i, key := range append(keys[:40:40], keys[len(keys)-4:]...) {
		proof, err := tr.Prove(key)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(byte(0), key, biPackProof(proof))
		f.Add(byte(1), key, biPackProof(proof[min(1, len(proof)-1):]))
		if i%8 == 0 {
			f.Add(byte(0), append(slices.Clone(key), 0x42), biPackProof(proof))
		}
	}
	f.Add(byte(0), []byte("dog"), []byte{})
	f.Fuzz(func(t *testing.T, mode byte, key, packed []byte) {
		proof := biUnpackProof(packed)
		r := root
		if mode%2 == 1 && len(proof) > 0 {
			r = hashkey.Keccak256(proof[0])
		}
		got, err := trie.VerifyProof(r, key, proof)
		if err != nil {
			if !errors.Is(err, trie.ErrBadProof) {
				t.Fatalf("error %v does not wrap ErrBadProof", err)
			}
			if got != nil {
				t.Fatalf("error %v with value %x", err, got)
			}
			return
		}
		if r == root {
			if want, _ := tr.Get(key); !bytes.Equal(got, want) {
				t.Fatalf("proof of %x accepted with value %x, true value %x", key, got, want)
			}
		}
	})
}

// TestRocksOpenAfterCreationCutShort covers the two windows in which a process
// killed inside rocks.Open's creation of a store used to leave a directory that
// no later Open accepted (found by TestCrash): before RocksDB wrote CURRENT
// (only LOCK, IDENTITY, LOG and the first MANIFEST/OPTIONS files, maybe as
// .dbtmp), and after CURRENT but before the "vertices" column family existed
// (a RocksDB database with only the default column family, empty). Both must
// open as a new store; a read-only open must say there is no database; a
// default-only database that holds anything stays refused and untouched.
func TestRocksOpenAfterCreationCutShort(t *testing.T) {
	useStore := func(t *testing.T, dir string) {
		t.Helper()
		st, err := rocks.Open(dir, nil)
		phMust(t, err, "rocks.Open after a creation cut short")
		db, err := trie.Open(st, nil)
		phMust(t, err, "trie.Open")
		fr := db.Begin()
		phMust(t, trie.G(fr).Put([]byte("k"), []byte("v")), "Put")
		phMust(t, db.Persist(fr, 1), "Persist")
		phMust(t, db.Close(), "Close")
		st, err = rocks.Open(dir, nil)
		phMust(t, err, "rocks.Open after the first persist")
		db, err = trie.Open(st, nil)
		phMust(t, err, "trie.Open")
		defer db.Close()
		if v, err := trie.G(db.Begin()).Get([]byte("k")); err != nil || string(v) != "v" {
			t.Fatalf("Get = %q, %v", v, err)
		}
	}
	readOnlyRefused := func(t *testing.T, dir string) {
		t.Helper()
		before := biListing(t, dir)
		st, err := rocks.Open(dir, &rocks.Options{ReadOnly: true})
		if err == nil {
			st.Close()
			t.Fatal("read-only Open of a creation cut short succeeded")
		}
		if !errors.Is(err, rocks.ErrNoDatabase) {
			t.Errorf("read-only Open: %v, want ErrNoDatabase", err)
		}
		if after := biListing(t, dir); after != before {
			t.Errorf("read-only Open changed the directory")
		}
	}
	for name, files := range map[string][]string{
		"before CURRENT":            {"LOCK", "IDENTITY", "LOG"},
		"before CURRENT, tmp":       {"LOCK", "IDENTITY", "LOG", "000001.dbtmp"},
		"before CURRENT, manifest":  {"LOCK", "IDENTITY", "LOG", "LOG.old.1700000000000000", "MANIFEST-000001", "OPTIONS-000005.dbtmp"},
		"not leftovers: sst":        {"LOCK", "IDENTITY", "000009.sst"},
		"not leftovers: wal":        {"LOCK", "IDENTITY", "000004.log"},
		"not leftovers: other file": {"LOCK", "IDENTITY", "notes.txt"},
		"before CURRENT, LOG only":  {"LOG"},
		"not leftovers: directory":  {"LOG", "archive/"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range files {
				if strings.HasSuffix(f, "/") {
					phMust(t, os.Mkdir(filepath.Join(dir, f), 0o755), "Mkdir")
					continue
				}
				content := ""
				switch {
				case f == "IDENTITY":
					content = "0b0f6a8e-7c1e-4d5e-9a51-3f5f0e8f1c2d\n"
				case strings.HasSuffix(f, ".dbtmp"):
					content = "MANIFEST-000001\n"
				case strings.HasPrefix(f, "MANIFEST"):
					content = "\x00\x01partial"
				}
				phMust(t, os.WriteFile(filepath.Join(dir, f), []byte(content), 0o644), "WriteFile")
			}
			if strings.HasPrefix(name, "not leftovers") {
				before := biListing(t, dir)
				st, err := rocks.Open(dir, nil)
				if err == nil {
					st.Close()
					t.Fatal("Open accepted a directory that is not a creation cut short")
				}
				if !errors.Is(err, rocks.ErrNotRocksDB) {
					t.Errorf("Open: %v, want ErrNotRocksDB", err)
				}
				if after := biListing(t, dir); after != before {
					t.Errorf("refused Open changed the directory")
				}
				return
			}
			readOnlyRefused(t, dir)
			useStore(t, dir)
		})
	}
	rawDB := func(t *testing.T, dir string, put bool) {
		o := grocksdb.NewDefaultOptions()
		defer o.Destroy()
		o.SetCreateIfMissing(true)
		db, err := grocksdb.OpenDb(o, dir)
		phMust(t, err, "grocksdb.OpenDb")
		if put {
			wo := grocksdb.NewDefaultWriteOptions()
			phMust(t, db.Put(wo, []byte("someone"), []byte("else")), "Put")
			wo.Destroy()
		}
		db.Close()
	}
	t.Run("default column family only", func(t *testing.T) {
		dir := t.TempDir()
		rawDB(t, dir, false)
		readOnlyRefused(t, dir)
		useStore(t, dir)
	})
	t.Run("default column family only, with data", func(t *testing.T) {
		dir := t.TempDir()
		rawDB(t, dir, true)
		before := biListing(t, dir)
		st, err := rocks.Open(dir, nil)
		if err == nil {
			st.Close()
			t.Fatal("Open accepted a foreign RocksDB database")
		}
		if !errors.Is(err, rocks.ErrForeignDB) {
			t.Errorf("Open: %v, want ErrForeignDB", err)
		}
		if after := biListing(t, dir); after != before {
			t.Errorf("refused Open changed the directory")
		}
	})
}
