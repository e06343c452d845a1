package trietest

import (
	"context"
	"fmt"
	"math/bits"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
	"github.com/holiman/uint256"
)

// Fixtures of the whole-state check (trie.DB.Check, cmd/trie-check): a state
// to check, and the ways of changing its records behind the database's back
// that the check must find.

// CheckedState writes a state worth checking into db (empty): n accounts
// loaded with a StateLoader (every 3rd with 1..8 slots) at block 1, then two
// blocks of updates, new slots, deleted slots and deleted accounts persisted
// on top. It returns the state root.
func CheckedState(t testing.TB, db *trie.DB, n int) hashkey.Hash {
	t.Helper()
	accs := RandomAccountLeaves(rand.New(rand.NewSource(7)), n, 3, 8)
	l, err := db.NewStateLoader()
	Must(t, err, "NewStateLoader")
	for rest := accs; len(rest) > 0; {
		k := min(len(rest), 500)
		Must(t, l.Add(rest[:k]), "StateLoader.Add")
		rest = rest[k:]
	}
	_, err = l.Commit(1)
	Must(t, err, "StateLoader.Commit")
	rng := rand.New(rand.NewSource(8))
	for block := uint64(2); block <= 3; block++ {
		fr := db.Begin()
		for i := 0; i < n/10; i++ {
			a := &accs[rng.Intn(len(accs))]
			switch rng.Intn(4) {
			case 0:
				Must(t, fr.DeleteAccount(a.AddrHash), "DeleteAccount")
			case 1:
				Must(t, fr.UpdateAccount(a.AddrHash, trie.Account{Nonce: uint64(i) + 1}), "UpdateAccount")
				Must(t, fr.UpdateStorage(a.AddrHash, hashkey.Keccak256([]byte{byte(i)}), uint256.NewInt(uint64(i)+1)), "UpdateStorage")
			case 2:
				if len(a.Storage) > 0 {
					if _, ok, _ := fr.Account(a.AddrHash); ok {
						Must(t, fr.UpdateStorage(a.AddrHash, a.Storage[0].Hash, nil), "UpdateStorage (delete)")
					}
				}
			default:
				Must(t, fr.UpdateAccount(a.AddrHash, trie.Account{Balance: *uint256.NewInt(uint64(i))}), "UpdateAccount")
			}
		}
		Must(t, db.Persist(fr, block), "Persist block %d", block)
	}
	root, err := db.StateRoot()
	Must(t, err, "StateRoot")
	return root
}

// Tamper is one way of changing a persisted state behind the database's
// back: by writing one record through the backend, as a disk error or a
// stray write would.
type Tamper struct {
	Name string
	// Apply changes one record of the state in b (whose DB is closed) and
	// returns the ID of the vertex a check must name.
	Apply func(t testing.TB, b trie.Backend) vertex.ID
	// Copies is set when the check names the vertex only in a store whose
	// branch records carry children's keys (vertex.ChildKeyCopies): a leaf's
	// key is stored nowhere else, so with keys once the check names the parent
	// whose stored key no longer matches.
	Copies bool
	// CopiesOnly is set when the change needs children's keys in records.
	CopiesOnly bool
}

// Tampers are the changes a check must find: a changed account balance (a
// leaf's value; no record holds a leaf's key, so its parent's stored child
// key no longer matches), a changed stored child key, a changed branch key,
// a changed storage root recorded in a contract's leaf, and a deleted leaf
// that its branch still refers to.
var Tampers = []Tamper{
	{"leaf value", func(t testing.TB, b trie.Backend) vertex.ID {
		id, v := findRecord(t, b, func(_ vertex.ID, v *vertex.Vertex) bool {
			return v.Kind == vertex.Leaf && v.Payload == vertex.AccountPayload
		})
		var one uint256.Int
		one.SetUint64(1)
		v.Acc.Balance.Add(&v.Acc.Balance, &one)
		putRecord(t, b, id, v)
		return id
	}, true, false},
	{"stored child key", func(t testing.TB, b trie.Backend) vertex.ID {
		id, v := findRecord(t, b, func(_ vertex.ID, v *vertex.Vertex) bool {
			return v.Kind == vertex.Branch && v.ChildKeys != nil && childKeySlot(v) >= 0
		})
		var kids [16]hashkey.Key
		v.ChildKeys.Unpack(&kids)
		n := childKeySlot(v)
		kids[n] = hashkey.HashKey(hashkey.Keccak256([]byte("tampered child key")))
		v.ChildKeys = vertex.PackChildKeys(nil, v.Used, &kids)
		putRecord(t, b, id, v)
		return id
	}, true, true},
	{"branch key", func(t testing.TB, b trie.Backend) vertex.ID {
		// Not the root's: Open compares the root's key with the admin record.
		id, v := findRecord(t, b, func(id vertex.ID, v *vertex.Vertex) bool {
			return id != vertex.RootID && v.Kind == vertex.Branch && v.Key.IsHash()
		})
		v.Key = hashkey.HashKey(hashkey.Keccak256([]byte("tampered branch key")))
		putRecord(t, b, id, v)
		return id
	}, false, false},
	{"recorded storage root", func(t testing.TB, b trie.Backend) vertex.ID {
		// The state's contract leaves record their storage roots (the
		// loader and the hasher put them there): one of them is changed.
		id, v := findRecord(t, b, func(_ vertex.ID, v *vertex.Vertex) bool {
			return v.Kind == vertex.Leaf && v.Acc != nil && v.Acc.StorageKey != (hashkey.Hash{})
		})
		v.Acc.StorageKey = hashkey.Keccak256([]byte("tampered storage root"))
		putRecord(t, b, id, v)
		return id
	}, false, false},
	{"deleted child", func(t testing.TB, b trie.Backend) vertex.ID {
		id, _ := findRecord(t, b, func(_ vertex.ID, v *vertex.Vertex) bool {
			return v.Kind == vertex.Leaf && v.Payload == vertex.AccountPayload
		})
		Must(t, b.Write(&vertex.Batch{Deletes: []vertex.ID{id}}), "deleting vertex %d", id)
		return id
	}, false, false},
}

// childKeySlot returns the first slot of branch v whose stored child key is
// a hash (changing an embedded node's key would change its length), or -1.
func childKeySlot(v *vertex.Vertex) int {
	var kids [16]hashkey.Key
	v.ChildKeys.Unpack(&kids)
	for u := v.Used; u != 0; u &= u - 1 {
		if n := bits.TrailingZeros16(u); kids[n].IsHash() {
			return n
		}
	}
	return -1
}

// findRecord returns the vertex of lowest ID (from the root up to the
// allocator's top) that ok accepts, decoded.
func findRecord(t testing.TB, b trie.Backend, ok func(vertex.ID, *vertex.Vertex) bool) (vertex.ID, *vertex.Vertex) {
	t.Helper()
	recs := Records(t, b)
	ids := make([]vertex.ID, 0, len(recs))
	for id := range recs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		v, err := vertex.Decode(recs[id])
		Must(t, err, "decoding vertex %d", id)
		if ok(id, v) {
			return id, v
		}
	}
	t.Fatal("no vertex to tamper with in the store")
	return 0, nil
}

// NamesVertex reports whether msg names vertex id ("vertex <id>" not
// followed by another digit).
func NamesVertex(msg string, id vertex.ID) bool {
	word := fmt.Sprintf("vertex %d", id)
	for i := strings.Index(msg, word); i >= 0; i = strings.Index(msg, word) {
		msg = msg[i+len(word):]
		if msg == "" || msg[0] < '0' || msg[0] > '9' {
			return true
		}
	}
	return false
}

// putRecord writes v as the record of vertex id.
func putRecord(t testing.TB, b trie.Backend, id vertex.ID, v *vertex.Vertex) {
	t.Helper()
	Must(t, b.Write(&vertex.Batch{Puts: []vertex.Record{{ID: id, Rec: vertex.Encode(nil, v)}}}), "writing vertex %d", id)
}

// CheckClean checks a fresh state with DB.Check, serially and on two
// workers: no violations, the root and the counts of the state, no record
// left unreachable, and the record cache untouched.
func CheckClean(t *testing.T, stores ...Opener) {
	Each(t, stores, func(t *testing.T, s *Store, f vertex.Format) {
		db := s.Open(f)
		root := CheckedState(t, db, 600)
		Must(t, db.Close(), "Close")
		db = s.Open(f) // reopened: the cache is cold
		for _, workers := range []int{1, 2} {
			before := db.CacheStats()
			rep, err := db.Check(context.Background(), &trie.CheckOptions{Workers: workers, CountRecords: true})
			Must(t, err, "Check (%d workers)", workers)
			if err := rep.Err(); err != nil {
				t.Fatalf("%d workers: a fresh state fails the check: %v", workers, err)
			}
			if rep.Root != root || rep.WantRoot != root {
				t.Errorf("%d workers: recomputed root %v, want %v (report's WantRoot %v)", workers, rep.Root, root, rep.WantRoot)
			}
			c := rep.Counts
			if c.Accounts < 500 || c.Slots == 0 || c.StorageTries == 0 || c.Vertices != c.Branches+c.Leaves || c.Bytes == 0 {
				t.Errorf("%d workers: implausible counts %+v", workers, c)
			}
			if rep.Records != c.Vertices || rep.Unreachable != 0 {
				t.Errorf("%d workers: %d records at or below the top, %d vertices reached, %d unreachable", workers, rep.Records, c.Vertices, rep.Unreachable)
			}
			if after := db.CacheStats(); after.Entries != before.Entries || after.Misses != before.Misses || after.Hits != before.Hits {
				t.Errorf("%d workers: the check used the record cache: %+v, before %+v", workers, after, before)
			}
		}
	})
}

// CheckFindsTampering changes one record of a fresh state at a time (each of
// Tampers) and expects DB.Check, serially and on two workers, to report a
// violation naming the changed vertex, in stores of both record variants
// (with keys once, a violation at all for the Copies tampers).
func CheckFindsTampering(t *testing.T, stores ...Opener) {
	for _, tp := range Tampers {
		for _, recs := range []vertex.Records{vertex.ChildKeyCopies, vertex.KeysOnce} {
			if tp.CopiesOnly && recs != vertex.ChildKeyCopies {
				continue
			}
			t.Run(strings.ReplaceAll(tp.Name, " ", "_")+"/"+recs.String(), func(t *testing.T) {
				Each(t, stores, func(t *testing.T, s *Store, f vertex.Format) {
					s.Records = recs
					checkTampered(t, s, f, tp, !tp.Copies || recs == vertex.ChildKeyCopies)
				})
			})
		}
	}
}

// checkTampered applies tp to a fresh state in s and checks that DB.Check
// reports it, naming the changed vertex when named.
func checkTampered(t *testing.T, s *Store, f vertex.Format, tp Tamper, named bool) {
	db := s.Open(f)
	CheckedState(t, db, 600)
	Must(t, db.Close(), "Close")
	b := s.Backend()
	id := tp.Apply(t, b)
	Must(t, b.Close(), "closing the backend")
	db = s.Open(f)
	for _, workers := range []int{1, 2} {
		rep, err := db.Check(context.Background(), &trie.CheckOptions{Workers: workers})
		Must(t, err, "Check (%d workers)", workers)
		err = rep.Err()
		if err == nil {
			t.Fatalf("%d workers: the check found nothing after a %s of vertex %d", workers, tp.Name, id)
		}
		t.Logf("%d workers, %s of vertex %d: %v (%d consequent key mismatches)", workers, tp.Name, id, err, rep.Consequent)
		if named && !NamesVertex(err.Error(), id) {
			t.Fatalf("%d workers: the report does not name vertex %d:\n%v", workers, id, err)
		}
	}
}
