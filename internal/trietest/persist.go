package trietest

// Persistence tests that run on every store (from trie/persist_test.go).

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/internal/ethtests"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

func PersistReopenGeneric(t *testing.T, stores ...Opener) {
	Each(t, stores, func(t *testing.T, s *Store, f vertex.Format) {
		db := s.Open(f)
		m := KeyModel{}
		fr := db.Begin()
		ApplyKeys(t, fr, m, KeyOps(1, 3000, Universe, 10), 1)
		root := FrameHash(t, fr)
		if want := KeysRoot(t, m); root != want {
			t.Fatalf("root %v, reference trie says %v", root, want)
		}
		Must(t, db.Persist(fr, 7), "Persist")
		if got := DBRoot(t, db); got != root {
			t.Fatalf("StateRoot after Persist = %v, want %v", got, root)
		}
		Must(t, db.Close(), "Close")
		if _, err := db.StateRoot(); err != trie.ErrClosed {
			t.Fatalf("StateRoot after Close: %v, want ErrClosed", err)
		}

		db = s.Open(f)
		if got := DBRoot(t, db); got != root {
			t.Fatalf("StateRoot after reopen = %v, want %v", got, root)
		}
		if db.Block() != 7 {
			t.Fatalf("Block after reopen = %d, want 7", db.Block())
		}
		if db.Format() != f {
			t.Fatalf("Format after reopen = %v, want %v", db.Format(), f)
		}
		fr = db.Begin()
		CheckKeys(t, fr, m, Universe)
		if got := FrameHash(t, fr); got != root {
			t.Fatalf("Hash of a fresh fr after reopen = %v, want %v", got, root)
		}
		// The reopened trie keeps working: change it and compare with the model.
		fr2 := db.Begin()
		ApplyKeys(t, fr2, m, KeyOps(2, 500, Universe, 40), 2)
		if got, want := FrameHash(t, fr2), KeysRoot(t, m); got != want {
			t.Fatalf("root after updates on the reopened DB = %v, want %v", got, want)
		}
	})
}

func PersistReopenState(t *testing.T, stores ...Opener) {
	Each(t, stores, func(t *testing.T, s *Store, f vertex.Format) {
		db := s.Open(f)
		st := &BlockState{Accts: map[int]trie.Account{}, Slots: map[int]map[int]uint64{}}
		r := rand.New(rand.NewPCG(42, 1))
		var roots []hashkey.Hash
		perBlock := 150
		if ethtests.RaceEnabled || testing.Short() {
			perBlock = 60
		}
		for block := uint64(1); block <= 3; block++ {
			fr := db.Begin()
			st.Apply(t, fr, r, int(block), perBlock)
			root := FrameHash(t, fr)
			srs := st.StorageRoots(t, fr)
			Must(t, db.Persist(fr, block), "Persist(%d)", block)
			roots = append(roots, root)
			Must(t, db.Close(), "Close")

			db = s.Open(f)
			if got := DBRoot(t, db); got != root || db.Block() != block {
				t.Fatalf("block %d: after reopen StateRoot = %v at block %d, want %v at %d", block, got, db.Block(), root, block)
			}
			fr = db.Begin()
			st.Check(t, fr, srs)
			if got := FrameHash(t, fr); got != root {
				t.Fatalf("block %d: Hash of a fresh fr = %v, want %v", block, got, root)
			}
		}
		if roots[0] == roots[1] || roots[1] == roots[2] {
			t.Fatalf("blocks did not change the root: %v", roots)
		}
		// Deleted accounts took their storage tries with them.
		db.Close()
		s.Raw(func(b trie.Backend) {
			live := CheckNoGarbage(t, b)
			accts := 0
			for _, v := range live {
				if v.Payload == vertex.AccountPayload {
					accts++
				}
			}
			if accts != len(st.Accts) {
				t.Errorf("%d account leaves stored, want %d", accts, len(st.Accts))
			}
		})
	})
}

// PersistRootNotRecomputed shows that reopening reads the root from the
// stored keys: Open + StateRoot + Hash of a fresh fr read at most the root's
// record, and still succeed when a leaf record below the root is corrupt (only
// reading that key fails).
func PersistRootNotRecomputed(t *testing.T, stores ...Opener) {
	Each(t, stores, func(t *testing.T, s *Store, f vertex.Format) {
		db := s.Open(f)
		m, root := BuildKeys(t, db, Universe)
		db.Close()

		b := s.Backend()
		before := b.Stats()
		db2, err := trie.Open(b, &trie.Options{Format: f})
		Must(t, err, "reopen")
		t.Cleanup(func() { db2.Close() })
		if got := DBRoot(t, db2); got != root {
			t.Fatalf("StateRoot = %v, want %v", got, root)
		}
		if got := FrameHash(t, db2.Begin()); got != root {
			t.Fatalf("Hash of a fresh fr = %v, want %v", got, root)
		}
		d := StatsDiff(db2.BackendStats(), before)
		if d.Records > 1 || d.PointReads > 2 || d.RangeReads+d.BatchReads > 0 {
			t.Fatalf("Open + StateRoot + Hash read %+v: the root is being recomputed", d)
		}
		db2.Close()

		// Corrupt one leaf deep below the root, directly in the store.
		var victim vertex.ID
		var victimKey int
		s.Raw(func(b trie.Backend) {
			for id, v := range Reachable(t, Records(t, b)) {
				if id != vertex.RootID && v.Kind == vertex.Leaf && len(v.Value) > 0 && (victim == 0 || id < victim) {
					victim = id
					_, err := fmt.Sscanf(string(v.Value), "k%d.", &victimKey)
					Must(t, err, "parsing leaf value %q", v.Value)
				}
			}
			Must(t, b.Write(&vertex.Batch{Puts: []vertex.Record{{ID: victim, Rec: []byte{0xff, 0x00, 0x13}}}}), "corrupting vertex %d", victim)
		})
		db3 := s.Open(f)
		if got := DBRoot(t, db3); got != root {
			t.Fatalf("StateRoot with a corrupt leaf = %v, want %v", got, root)
		}
		fr := db3.Begin()
		if got := FrameHash(t, fr); got != root {
			t.Fatalf("Hash with a corrupt leaf = %v, want %v", got, root)
		}
		if _, err := G(fr).Get(GenKey(victimKey)); !errors.Is(err, vertex.ErrCorrupt) {
			t.Fatalf("Get of the key whose leaf (vertex %d) is corrupt: err = %v, want vertex.ErrCorrupt", victim, err)
		}
		other := (victimKey + 1) % Universe
		if got, err := G(fr).Get(GenKey(other)); err != nil || !bytes.Equal(got, m[other]) {
			t.Fatalf("Get(key %d) next to the corrupt leaf = %q, %v; want %q", other, got, err, m[other])
		}
	})
}

// PersistDeletesAcrossBlocks persists several blocks with deletes (one of
// them as two chained frames), and after each checks the store holds exactly the
// reachable vertices; the last block deletes every key and must leave no vertex
// record at all.
func PersistDeletesAcrossBlocks(t *testing.T, stores ...Opener) {
	Each(t, stores, func(t *testing.T, s *Store, f vertex.Format) {
		db := s.Open(f)
		m := KeyModel{}
		const blocks = 6
		for block := 1; block <= blocks; block++ {
			fr := db.Begin()
			switch {
			case block == blocks: // delete everything
				for i := range m {
					Must(t, G(fr).Delete(GenKey(i)), "Delete(%d)", i)
				}
				clear(m)
			case block == 3: // two frames persisted in one batch
				ApplyKeys(t, fr, m, KeyOps(uint64(block), 400, Universe, 50), block)
				fr = fr.Begin()
				ApplyKeys(t, fr, m, KeyOps(uint64(block)+100, 400, Universe, 50), block*10)
			default:
				pdel := 20 + 15*block
				ApplyKeys(t, fr, m, KeyOps(uint64(block), 800, Universe, pdel), block)
			}
			root := FrameHash(t, fr)
			if want := KeysRoot(t, m); root != want {
				t.Fatalf("block %d: root %v, reference %v", block, root, want)
			}
			Must(t, db.Persist(fr, uint64(block)), "Persist(%d)", block)
			Must(t, db.Close(), "Close")
			s.Raw(func(b trie.Backend) {
				live := CheckNoGarbage(t, b)
				leaves := 0
				for _, v := range live {
					if v.Payload == vertex.RawPayload {
						leaves++
					}
				}
				if leaves != len(m) {
					t.Errorf("block %d: %d values stored, want %d", block, leaves, len(m))
				}
			})
			db = s.Open(f)
			if got := DBRoot(t, db); got != root || db.Block() != uint64(block) {
				t.Fatalf("block %d: reopened at %v, block %d; want %v", block, got, db.Block(), root)
			}
			CheckKeys(t, db.Begin(), m, Universe)
		}
		if got := DBRoot(t, db); got != hashkey.EmptyRoot {
			t.Fatalf("root after deleting everything = %v, want the empty root", got)
		}
		db.Close()
		s.Raw(func(b trie.Backend) {
			if recs := Records(t, b); len(recs) != 0 {
				t.Fatalf("%d vertex records left after deleting every key", len(recs))
			}
		})
	})
}

// PersistKeepsCache checks that a persist refreshes the vertex cache in
// place: it keeps its entries and budget, and a read of a key the persist did
// not touch is a cache hit, not a backend read.
func PersistKeepsCache(t *testing.T, stores ...Opener) {
	Each(t, stores, func(t *testing.T, s *Store, f vertex.Format) {
		db := s.OpenWith(trie.Options{Format: f, CacheBytes: 64 << 20})
		m, _ := BuildKeys(t, db, Universe)
		db.Close()
		db = s.OpenWith(trie.Options{Format: f, CacheBytes: 64 << 20})
		CheckKeys(t, db.Begin(), m, Universe) // warm the cache
		warm := db.CacheStats()
		if warm.Entries < Universe {
			t.Fatalf("cache holds %d entries after reading %d keys", warm.Entries, Universe)
		}
		fr := db.Begin()
		ApplyKeys(t, fr, m, []int{3, 5, 7, -10, -12, 4000, 4001}, 1)
		FrameHash(t, fr)
		Must(t, db.Persist(fr, 2), "Persist")
		Must(t, db.Flush(), "Flush") // the writer refreshes the cache when the write lands
		after := db.CacheStats()
		if after.Entries < warm.Entries-20 || after.Budget != warm.Budget {
			t.Fatalf("cache after Persist: %+v; before: %+v (entries or budget lost)", after, warm)
		}

		// Keys the persist did not touch are served from the cache.
		bs, cs := db.BackendStats(), db.CacheStats()
		fr = db.Begin()
		for _, i := range []int{100, 500, 1500, 1999} {
			got, err := G(fr).Get(GenKey(i))
			if err != nil || !bytes.Equal(got, m[i]) {
				t.Fatalf("Get(key %d) = %q, %v; want %q", i, got, err, m[i])
			}
		}
		if d := StatsDiff(db.BackendStats(), bs); d.Reads() != 0 {
			t.Fatalf("reading untouched keys after Persist hit the backend: %+v", d)
		}
		if c := db.CacheStats(); c.Hits <= cs.Hits || c.Misses != cs.Misses {
			t.Fatalf("cache hits %d -> %d, misses %d -> %d: want hits only", cs.Hits, c.Hits, cs.Misses, c.Misses)
		}
		// The changed keys read back right (from the refreshed cache).
		for _, i := range []int{3, 10, 4000} {
			got, err := G(fr).Get(GenKey(i))
			if err != nil || !bytes.Equal(got, m[i]) {
				t.Fatalf("Get(key %d) = %q, %v; want %q", i, got, err, m[i])
			}
		}
	})
}

// PersistV2GroupReads runs the same update workload on a cold reopened DB
// in both formats, with records that do not carry children's keys: v2 hashing
// must load a branch's children in one read of its group (a batch of its used
// slots) and need far fewer backend reads than v1. With children's keys
// neither reads siblings at all.
func PersistV2GroupReads(t *testing.T, stores ...Opener) {
	if InvariantChecks {
		t.Skip("counts backend reads, which the invariants build's checks add to")
	}
	for _, o := range stores {
		kind := o.Name
		t.Run(kind, func(t *testing.T) {
			reads := map[vertex.Format]vertex.ReadStats{}
			roots := map[vertex.Format]hashkey.Hash{}
			for _, f := range Formats {
				s := NewStore(t, o)
				s.Records = vertex.KeysOnce
				db := s.Open(f)
				m, _ := BuildKeys(t, db, 4000)
				db.Close()
				db = s.Open(f)
				before := db.BackendStats()
				fr := db.Begin()
				ApplyKeys(t, fr, m, KeyOps(9, 300, 4000, 0), 1)
				roots[f] = FrameHash(t, fr)
				reads[f] = StatsDiff(db.BackendStats(), before)
				t.Logf("%v: %+v", f, reads[f])
			}
			if roots[vertex.FormatV1] != roots[vertex.FormatV2] {
				t.Fatalf("roots differ: v1 %v, v2 %v", roots[vertex.FormatV1], roots[vertex.FormatV2])
			}
			v1, v2 := reads[vertex.FormatV1], reads[vertex.FormatV2]
			if v1.RangeReads != 0 || v1.BatchReads != 0 {
				t.Errorf("v1 made %d range and %d batch reads, want point reads only", v1.RangeReads, v1.BatchReads)
			}
			if v2.BatchReads == 0 {
				t.Errorf("v2 read no group of used slots")
			}
			if 2*(v2.PointReads+v2.RangeReads+v2.BatchReads) > v1.PointReads {
				t.Errorf("v2 made %d point + %d range + %d batch reads, v1 %d point reads: want v2 at most half", v2.PointReads, v2.RangeReads, v2.BatchReads, v1.PointReads)
			}
		})
	}
}
