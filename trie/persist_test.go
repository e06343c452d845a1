package trie_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/holiman/uint256"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/internal/ethtests"
	"github.com/hexstate/hexstate/rocks"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// This file checks what survives a persist, a close and a reopen, on the memory
// and RocksDB backends in both formats: the root (read from the stored keys, not
// recomputed), every key and account, deletions (gone from the backend, not just
// unreachable), the vertex cache, and that format v2 reads a branch's children
// with one range read. Helpers prefixed "ph" are shared with badinput_test.go,
// crash_test.go and layout_bench_test.go.

// phStore is one store that a test opens, closes and reopens. For the memory
// backend every open returns the same backend value (its Close keeps the
// records), so a reopen behaves like a restart; for RocksDB it reopens the dir.
type phStore struct {
	kind string
	dir  string        // RocksDB only
	mem  trie.Backend  // memory only
	tb   testing.TB    // for Fatal in open
	ro   rocks.Options // RocksDB options

	noChildKeys bool // open with Options.NoChildKeys
}

var phKinds = []string{"memory", "rocksdb"}

var phFormats = []vertex.Format{vertex.FormatV1, vertex.FormatV2}

func phRocksOptions() rocks.Options {
	return rocks.Options{BlockCacheBytes: 8 << 20, WriteBufferBytes: 4 << 20, BackgroundJobs: 2}
}

func newPhStore(tb testing.TB, kind string) *phStore {
	s := &phStore{kind: kind, tb: tb, ro: phRocksOptions()}
	if kind == "memory" {
		s.mem = trie.NewMemoryBackend()
	} else {
		s.dir = tb.TempDir()
	}
	return s
}

// backend opens the store's backend; the caller closes it (directly or through
// a DB).
func (s *phStore) backend() trie.Backend {
	s.tb.Helper()
	if s.mem != nil {
		return s.mem
	}
	o := s.ro
	st, err := rocks.Open(s.dir, &o)
	if err != nil {
		s.tb.Fatalf("rocks.Open(%s): %v", s.dir, err)
	}
	return st
}

// open opens a DB of format f on the store; Cleanup closes it.
func (s *phStore) open(f vertex.Format, cacheBytes int) *trie.DB {
	s.tb.Helper()
	b := s.backend()
	db, err := trie.Open(b, &trie.Options{Format: f, CacheBytes: cacheBytes, NoChildKeys: s.noChildKeys})
	if err != nil {
		b.Close()
		s.tb.Fatalf("trie.Open(%s, %v): %v", s.kind, f, err)
	}
	s.tb.Cleanup(func() { db.Close() })
	return db
}

// raw runs fn on the backend alone (no DB), then closes it.
func (s *phStore) raw(fn func(b trie.Backend)) {
	s.tb.Helper()
	b := s.backend()
	defer func() {
		if err := b.Close(); err != nil {
			s.tb.Errorf("closing the backend: %v", err)
		}
	}()
	fn(b)
}

// phEach runs fn as a subtest for every backend and format.
func phEach(t *testing.T, fn func(t *testing.T, s *phStore, f vertex.Format)) {
	for _, kind := range phKinds {
		for _, f := range phFormats {
			t.Run(kind+"/"+f.String(), func(t *testing.T) {
				fn(t, newPhStore(t, kind), f)
			})
		}
	}
}

func phMust(t testing.TB, err error, what string, args ...any) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", fmt.Sprintf(what, args...), err)
	}
}

// phKey is generic key i: 32 bytes (keccak of i), except that every 16th key is
// 2..4 bytes long (unique by its first two bytes) and the key before it extends
// it to 32 bytes, so that some keys are prefixes of others (branch values) and
// some nodes are small enough to be embedded in their parents.
func phKey(i int) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(i))
	h := hashkey.Keccak256(b[:])
	switch i % 16 {
	case 15:
		return append([]byte{byte(i >> 12), byte(i >> 4)}, h[:i/16%3]...)
	case 14:
		k := phKey(i + 1)
		return append(k, h[:32-len(k)]...)
	}
	return h[:]
}

// phValue is the value of key i at version ver: some short (embedded leaves),
// most 40..100 bytes; it names i so a record can be traced back to its key.
func phValue(i, ver int) []byte {
	v := fmt.Appendf(nil, "k%d.v%d", i, ver)
	if (i+ver)%5 != 0 {
		v = append(v, bytes.Repeat([]byte{byte('a' + (i+ver)%26)}, 32+(i*7+ver)%60)...)
	}
	return v
}

// phModel is the expected content of a generic trie: key index -> value.
type phModel map[int][]byte

// phApply applies ops (>= 0: put a new version of key op, < 0: delete key -op-1)
// to fr and model.
func phApply(t testing.TB, fr *trie.Frame, m phModel, ops []int, ver int) {
	t.Helper()
	for _, op := range ops {
		if op >= 0 {
			v := phValue(op, ver)
			phMust(t, trie.G(fr).Put(phKey(op), v), "Put(key %d)", op)
			m[op] = v
		} else {
			phMust(t, trie.G(fr).Delete(phKey(-op-1)), "Delete(key %d)", -op-1)
			delete(m, -op-1)
		}
	}
}

// phOps returns n deterministic random ops over keys [0, universe), deleting
// with probability pdel percent.
func phOps(seed uint64, n, universe, pdel int) []int {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	ops := make([]int, n)
	for i := range ops {
		k := r.IntN(universe)
		if r.IntN(100) < pdel {
			ops[i] = -k - 1
		} else {
			ops[i] = k
		}
	}
	return ops
}

// phCheckModel checks that fr holds exactly m (every key in [0, universe) is
// present with its value or absent), and that the iterator yields m's keys.
func phCheckModel(t testing.TB, fr *trie.Frame, m phModel, universe int) {
	t.Helper()
	bad := 0
	for i := 0; i < universe && bad < 5; i++ {
		got, err := trie.G(fr).Get(phKey(i))
		if err != nil {
			t.Fatalf("Get(key %d): %v", i, err)
		}
		if want := m[i]; !bytes.Equal(got, want) {
			t.Errorf("Get(key %d) = %q, want %q", i, got, want)
			bad++
		}
	}
	n := 0
	it := trie.G(fr).Iterator(nil)
	for it.Next() {
		n++
	}
	phMust(t, it.Err(), "iterating")
	if n != len(m) {
		t.Errorf("iterator yields %d keys, want %d", n, len(m))
	}
}

// phModelRoot computes the root m must have, on an independent in-memory trie.
func phModelRoot(t testing.TB, m phModel) hashkey.Hash {
	t.Helper()
	tr := trie.NewTrie()
	for i, v := range m {
		phMust(t, tr.Put(phKey(i), v), "reference Put")
	}
	return tr.Hash()
}

// phAdminTop reads the allocator top from the admin record (docs: "hxst" |
// format u8 | top u64 | block u64 | root [32] | crc32c u32).
func phAdminTop(t testing.TB, b trie.Backend) vertex.ID {
	t.Helper()
	a, err := b.Admin()
	phMust(t, err, "Admin")
	if len(a) != 57 {
		t.Fatalf("admin record of %d bytes, want 57", len(a))
	}
	return vertex.ID(binary.BigEndian.Uint64(a[5:13]))
}

// phRecords returns every vertex record in b (IDs 1..top of the admin record).
func phRecords(t testing.TB, b trie.Backend) map[vertex.ID][]byte {
	t.Helper()
	top := phAdminTop(t, b)
	recs := map[vertex.ID][]byte{}
	err := b.VertexRange(vertex.RootID, int(top), func(id vertex.ID, rec []byte) error {
		recs[id] = slices.Clone(rec)
		return nil
	})
	phMust(t, err, "VertexRange")
	return recs
}

// phReachable returns the IDs reachable from the root in recs: branch children
// and account storage tries. It fails t when a reachable ID has no record or an
// undecodable one.
func phReachable(t testing.TB, recs map[vertex.ID][]byte) map[vertex.ID]*vertex.Vertex {
	t.Helper()
	seen := map[vertex.ID]*vertex.Vertex{}
	var walk func(id vertex.ID)
	walk = func(id vertex.ID) {
		rec, ok := recs[id]
		if !ok {
			t.Fatalf("vertex %d is referenced but has no record", id)
		}
		v, err := vertex.Decode(rec)
		phMust(t, err, "decoding vertex %d", id)
		if seen[id] != nil {
			t.Fatalf("vertex %d is referenced twice", id)
		}
		seen[id] = v
		for n := 0; n < 16; n++ {
			if c := v.Child(n); c != vertex.NoID {
				walk(c)
			}
		}
		if v.Acc != nil && v.Acc.Storage != vertex.NoID {
			walk(v.Acc.Storage)
		}
	}
	if len(recs) > 0 {
		walk(vertex.RootID)
	}
	return seen
}

// phCheckNoGarbage fails t unless every record in b is reachable from the root:
// deleted and replaced vertices must be gone from the store.
func phCheckNoGarbage(t testing.TB, b trie.Backend) map[vertex.ID]*vertex.Vertex {
	t.Helper()
	recs := phRecords(t, b)
	live := phReachable(t, recs)
	var orphans []vertex.ID
	for id := range recs {
		if live[id] == nil {
			orphans = append(orphans, id)
		}
	}
	if len(orphans) > 0 {
		slices.Sort(orphans)
		t.Errorf("%d records are not reachable from the root (deleted vertices left behind), e.g. %v", len(orphans), orphans[:min(8, len(orphans))])
	}
	return live
}

// phStats subtracts two backend read counters.
func phStats(a, b vertex.ReadStats) vertex.ReadStats {
	return vertex.ReadStats{PointReads: a.PointReads - b.PointReads, RangeReads: a.RangeReads - b.RangeReads, Records: a.Records - b.Records}
}

func phHash(t testing.TB, fr *trie.Frame) hashkey.Hash {
	t.Helper()
	h, err := trie.G(fr).Hash()
	phMust(t, err, "Hash")
	return h
}

func phRoot(t testing.TB, db *trie.DB) hashkey.Hash {
	t.Helper()
	h, err := db.StateRoot()
	phMust(t, err, "StateRoot")
	return h
}

const phUniverse = 2000

// phBuild persists block 1 with keys [0, n) on a fresh DB and returns the model
// and root.
func phBuild(t testing.TB, db *trie.DB, n int) (phModel, hashkey.Hash) {
	t.Helper()
	m := phModel{}
	fr := db.Begin()
	ops := make([]int, n)
	for i := range ops {
		ops[i] = i
	}
	phApply(t, fr, m, ops, 0)
	root := phHash(t, fr)
	phMust(t, db.Persist(fr, 1), "Persist(1)")
	return m, root
}

func TestPersistReopenGeneric(t *testing.T) {
	phEach(t, func(t *testing.T, s *phStore, f vertex.Format) {
		db := s.open(f, 0)
		m := phModel{}
		fr := db.Begin()
		phApply(t, fr, m, phOps(1, 3000, phUniverse, 10), 1)
		root := phHash(t, fr)
		if want := phModelRoot(t, m); root != want {
			t.Fatalf("root %v, reference trie says %v", root, want)
		}
		phMust(t, db.Persist(fr, 7), "Persist")
		if got := phRoot(t, db); got != root {
			t.Fatalf("StateRoot after Persist = %v, want %v", got, root)
		}
		phMust(t, db.Close(), "Close")
		if _, err := db.StateRoot(); err != trie.ErrClosed {
			t.Fatalf("StateRoot after Close: %v, want ErrClosed", err)
		}

		db = s.open(f, 0)
		if got := phRoot(t, db); got != root {
			t.Fatalf("StateRoot after reopen = %v, want %v", got, root)
		}
		if db.Block() != 7 {
			t.Fatalf("Block after reopen = %d, want 7", db.Block())
		}
		if db.Format() != f {
			t.Fatalf("Format after reopen = %v, want %v", db.Format(), f)
		}
		fr = db.Begin()
		phCheckModel(t, fr, m, phUniverse)
		if got := phHash(t, fr); got != root {
			t.Fatalf("Hash of a fresh fr after reopen = %v, want %v", got, root)
		}
		// The reopened trie keeps working: change it and compare with the model.
		fr2 := db.Begin()
		phApply(t, fr2, m, phOps(2, 500, phUniverse, 40), 2)
		if got, want := phHash(t, fr2), phModelRoot(t, m); got != want {
			t.Fatalf("root after updates on the reopened DB = %v, want %v", got, want)
		}
	})
}

// phAcct is a state-test account: index i, version ver.
func phAcct(i, ver int) trie.Account {
	a := trie.Account{Nonce: uint64(i*3 + ver)}
	a.Balance.SetUint64(uint64(i)*1_000_000_007 + uint64(ver))
	if i%4 == 1 {
		a.CodeHash = hashkey.Keccak256([]byte{byte(i)})
	}
	return a
}

func phAddr(i int) hashkey.Hash { return hashkey.Keccak256([]byte(fmt.Sprintf("addr%d", i))) }

func phSlot(j int) hashkey.Hash { return hashkey.Keccak256([]byte(fmt.Sprintf("slot%d", j))) }

// phState is the expected state: accounts and their storage.
type phState struct {
	accts map[int]trie.Account
	slots map[int]map[int]uint64
}

func (st *phState) apply(t testing.TB, fr *trie.Frame, r *rand.Rand, ver, nacct int) {
	t.Helper()
	for i := 0; i < nacct; i++ {
		a := r.IntN(200)
		switch op := r.IntN(10); {
		case op == 0: // delete the account and its storage
			phMust(t, fr.DeleteAccount(phAddr(a)), "DeleteAccount(%d)", a)
			delete(st.accts, a)
			delete(st.slots, a)
		default:
			acc := phAcct(a, ver)
			phMust(t, fr.UpdateAccount(phAddr(a), acc), "UpdateAccount(%d)", a)
			acc.CodeHash = phCodeHash(acc.CodeHash)
			st.accts[a] = acc
			if st.slots[a] == nil {
				st.slots[a] = map[int]uint64{}
			}
			for k := r.IntN(12); k > 0; k-- {
				j := r.IntN(40)
				val := uint64(0)
				if r.IntN(4) != 0 {
					val = r.Uint64N(1<<40) + 1
				}
				phMust(t, fr.UpdateStorage(phAddr(a), phSlot(j), uint256.NewInt(val)), "UpdateStorage(%d, %d)", a, j)
				if val == 0 {
					delete(st.slots[a], j)
				} else {
					st.slots[a][j] = val
				}
			}
		}
	}
}

func phCodeHash(h hashkey.Hash) hashkey.Hash {
	if h == (hashkey.Hash{}) {
		return hashkey.EmptyCodeHash
	}
	return h
}

func (st *phState) check(t testing.TB, fr *trie.Frame, storageRoots map[int]hashkey.Hash) {
	t.Helper()
	for a := 0; a < 200; a++ {
		got, ok, err := fr.Account(phAddr(a))
		phMust(t, err, "Account(%d)", a)
		want, wantOK := st.accts[a]
		if ok != wantOK || (ok && (got.Nonce != want.Nonce || got.Balance != want.Balance || got.CodeHash != want.CodeHash)) {
			t.Fatalf("Account(%d) = %+v, %v; want %+v, %v", a, got, ok, want, wantOK)
		}
		for j := 0; j < 40; j++ {
			v, err := fr.Storage(phAddr(a), phSlot(j))
			phMust(t, err, "Storage(%d, %d)", a, j)
			if want := st.slots[a][j]; !wantOK && !v.IsZero() || wantOK && v.Uint64() != want {
				t.Fatalf("Storage(%d, %d) = %v, want %d", a, j, &v, want)
			}
		}
		if storageRoots != nil {
			sr, err := fr.StorageRoot(phAddr(a))
			phMust(t, err, "StorageRoot(%d)", a)
			if sr != storageRoots[a] {
				t.Fatalf("StorageRoot(%d) = %v, want %v", a, sr, storageRoots[a])
			}
		}
	}
}

func (st *phState) storageRoots(t testing.TB, fr *trie.Frame) map[int]hashkey.Hash {
	t.Helper()
	m := map[int]hashkey.Hash{}
	for a := 0; a < 200; a++ {
		sr, err := fr.StorageRoot(phAddr(a))
		phMust(t, err, "StorageRoot(%d)", a)
		m[a] = sr
	}
	return m
}

func TestPersistReopenState(t *testing.T) {
	phEach(t, func(t *testing.T, s *phStore, f vertex.Format) {
		db := s.open(f, 0)
		st := &phState{accts: map[int]trie.Account{}, slots: map[int]map[int]uint64{}}
		r := rand.New(rand.NewPCG(42, 1))
		var roots []hashkey.Hash
		perBlock := 150
		if ethtests.RaceEnabled || testing.Short() {
			perBlock = 60
		}
		for block := uint64(1); block <= 3; block++ {
			fr := db.Begin()
			st.apply(t, fr, r, int(block), perBlock)
			root := phHash(t, fr)
			srs := st.storageRoots(t, fr)
			phMust(t, db.Persist(fr, block), "Persist(%d)", block)
			roots = append(roots, root)
			phMust(t, db.Close(), "Close")

			db = s.open(f, 0)
			if got := phRoot(t, db); got != root || db.Block() != block {
				t.Fatalf("block %d: after reopen StateRoot = %v at block %d, want %v at %d", block, got, db.Block(), root, block)
			}
			fr = db.Begin()
			st.check(t, fr, srs)
			if got := phHash(t, fr); got != root {
				t.Fatalf("block %d: Hash of a fresh fr = %v, want %v", block, got, root)
			}
		}
		if roots[0] == roots[1] || roots[1] == roots[2] {
			t.Fatalf("blocks did not change the root: %v", roots)
		}
		// Deleted accounts took their storage tries with them.
		db.Close()
		s.raw(func(b trie.Backend) {
			live := phCheckNoGarbage(t, b)
			accts := 0
			for _, v := range live {
				if v.Payload == vertex.AccountPayload {
					accts++
				}
			}
			if accts != len(st.accts) {
				t.Errorf("%d account leaves stored, want %d", accts, len(st.accts))
			}
		})
	})
}

// TestPersistRootNotRecomputed shows that reopening reads the root from the
// stored keys: Open + StateRoot + Hash of a fresh fr read at most the root's
// record, and still succeed when a leaf record below the root is corrupt (only
// reading that key fails).
func TestPersistRootNotRecomputed(t *testing.T) {
	phEach(t, func(t *testing.T, s *phStore, f vertex.Format) {
		db := s.open(f, 0)
		m, root := phBuild(t, db, phUniverse)
		db.Close()

		b := s.backend()
		before := b.Stats()
		db2, err := trie.Open(b, &trie.Options{Format: f})
		phMust(t, err, "reopen")
		t.Cleanup(func() { db2.Close() })
		if got := phRoot(t, db2); got != root {
			t.Fatalf("StateRoot = %v, want %v", got, root)
		}
		if got := phHash(t, db2.Begin()); got != root {
			t.Fatalf("Hash of a fresh fr = %v, want %v", got, root)
		}
		d := phStats(db2.BackendStats(), before)
		if d.Records > 1 || d.PointReads > 2 || d.RangeReads > 0 {
			t.Fatalf("Open + StateRoot + Hash read %+v: the root is being recomputed", d)
		}
		db2.Close()

		// Corrupt one leaf deep below the root, directly in the store.
		var victim vertex.ID
		var victimKey int
		s.raw(func(b trie.Backend) {
			for id, v := range phReachable(t, phRecords(t, b)) {
				if id != vertex.RootID && v.Kind == vertex.Leaf && len(v.Value) > 0 && (victim == 0 || id < victim) {
					victim = id
					_, err := fmt.Sscanf(string(v.Value), "k%d.", &victimKey)
					phMust(t, err, "parsing leaf value %q", v.Value)
				}
			}
			phMust(t, b.Write(&vertex.Batch{Puts: []vertex.Record{{ID: victim, Rec: []byte{0xff, 0x00, 0x13}}}}), "corrupting vertex %d", victim)
		})
		db3 := s.open(f, 0)
		if got := phRoot(t, db3); got != root {
			t.Fatalf("StateRoot with a corrupt leaf = %v, want %v", got, root)
		}
		fr := db3.Begin()
		if got := phHash(t, fr); got != root {
			t.Fatalf("Hash with a corrupt leaf = %v, want %v", got, root)
		}
		if _, err := trie.G(fr).Get(phKey(victimKey)); !errors.Is(err, vertex.ErrCorrupt) {
			t.Fatalf("Get of the key whose leaf (vertex %d) is corrupt: err = %v, want vertex.ErrCorrupt", victim, err)
		}
		other := (victimKey + 1) % phUniverse
		if got, err := trie.G(fr).Get(phKey(other)); err != nil || !bytes.Equal(got, m[other]) {
			t.Fatalf("Get(key %d) next to the corrupt leaf = %q, %v; want %q", other, got, err, m[other])
		}
	})
}

// TestPersistDeletesAcrossBlocks persists several blocks with deletes (one of
// them as two chained frames), and after each checks the store holds exactly the
// reachable vertices; the last block deletes every key and must leave no vertex
// record at all.
func TestPersistDeletesAcrossBlocks(t *testing.T) {
	phEach(t, func(t *testing.T, s *phStore, f vertex.Format) {
		db := s.open(f, 0)
		m := phModel{}
		const blocks = 6
		for block := 1; block <= blocks; block++ {
			fr := db.Begin()
			switch {
			case block == blocks: // delete everything
				for i := range m {
					phMust(t, trie.G(fr).Delete(phKey(i)), "Delete(%d)", i)
				}
				clear(m)
			case block == 3: // two frames persisted in one batch
				phApply(t, fr, m, phOps(uint64(block), 400, phUniverse, 50), block)
				fr = fr.Begin()
				phApply(t, fr, m, phOps(uint64(block)+100, 400, phUniverse, 50), block*10)
			default:
				pdel := 20 + 15*block
				phApply(t, fr, m, phOps(uint64(block), 800, phUniverse, pdel), block)
			}
			root := phHash(t, fr)
			if want := phModelRoot(t, m); root != want {
				t.Fatalf("block %d: root %v, reference %v", block, root, want)
			}
			phMust(t, db.Persist(fr, uint64(block)), "Persist(%d)", block)
			phMust(t, db.Close(), "Close")
			s.raw(func(b trie.Backend) {
				live := phCheckNoGarbage(t, b)
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
			db = s.open(f, 0)
			if got := phRoot(t, db); got != root || db.Block() != uint64(block) {
				t.Fatalf("block %d: reopened at %v, block %d; want %v", block, got, db.Block(), root)
			}
			phCheckModel(t, db.Begin(), m, phUniverse)
		}
		if got := phRoot(t, db); got != hashkey.EmptyRoot {
			t.Fatalf("root after deleting everything = %v, want the empty root", got)
		}
		db.Close()
		s.raw(func(b trie.Backend) {
			if recs := phRecords(t, b); len(recs) != 0 {
				t.Fatalf("%d vertex records left after deleting every key", len(recs))
			}
		})
	})
}

// TestPersistKeepsCache checks that a persist refreshes the vertex cache in
// place: it keeps its entries and budget, and a read of a key the persist did
// not touch is a cache hit, not a backend read.
func TestPersistKeepsCache(t *testing.T) {
	phEach(t, func(t *testing.T, s *phStore, f vertex.Format) {
		db := s.open(f, 64<<20)
		m, _ := phBuild(t, db, phUniverse)
		db.Close()
		db = s.open(f, 64<<20)
		phCheckModel(t, db.Begin(), m, phUniverse) // warm the cache
		warm := db.CacheStats()
		if warm.Entries < phUniverse {
			t.Fatalf("cache holds %d entries after reading %d keys", warm.Entries, phUniverse)
		}
		fr := db.Begin()
		phApply(t, fr, m, []int{3, 5, 7, -10, -12, 4000, 4001}, 1)
		phHash(t, fr)
		phMust(t, db.Persist(fr, 2), "Persist")
		after := db.CacheStats()
		if after.Entries < warm.Entries-20 || after.Budget != warm.Budget {
			t.Fatalf("cache after Persist: %+v; before: %+v (entries or budget lost)", after, warm)
		}

		// Keys the persist did not touch are served from the cache.
		bs, cs := db.BackendStats(), db.CacheStats()
		fr = db.Begin()
		for _, i := range []int{100, 500, 1500, 1999} {
			got, err := trie.G(fr).Get(phKey(i))
			if err != nil || !bytes.Equal(got, m[i]) {
				t.Fatalf("Get(key %d) = %q, %v; want %q", i, got, err, m[i])
			}
		}
		if d := phStats(db.BackendStats(), bs); d.PointReads+d.RangeReads != 0 {
			t.Fatalf("reading untouched keys after Persist hit the backend: %+v", d)
		}
		if c := db.CacheStats(); c.Hits <= cs.Hits || c.Misses != cs.Misses {
			t.Fatalf("cache hits %d -> %d, misses %d -> %d: want hits only", cs.Hits, c.Hits, cs.Misses, c.Misses)
		}
		// The changed keys read back right (from the refreshed cache).
		for _, i := range []int{3, 10, 4000} {
			got, err := trie.G(fr).Get(phKey(i))
			if err != nil || !bytes.Equal(got, m[i]) {
				t.Fatalf("Get(key %d) = %q, %v; want %q", i, got, err, m[i])
			}
		}
	})
}

// TestPersistV2RangeReads runs the same update workload on a cold reopened DB
// in both formats, with records that do not carry children's keys: v2 hashing
// must load branch children with range reads and need far fewer backend reads
// than v1. With children's keys (the default) neither reads siblings at all.
func TestPersistV2RangeReads(t *testing.T) {
	for _, kind := range phKinds {
		t.Run(kind, func(t *testing.T) {
			reads := map[vertex.Format]vertex.ReadStats{}
			roots := map[vertex.Format]hashkey.Hash{}
			for _, f := range phFormats {
				s := newPhStore(t, kind)
				s.noChildKeys = true
				db := s.open(f, 0)
				m, _ := phBuild(t, db, 4000)
				db.Close()
				db = s.open(f, 0)
				before := db.BackendStats()
				fr := db.Begin()
				phApply(t, fr, m, phOps(9, 300, 4000, 0), 1)
				roots[f] = phHash(t, fr)
				reads[f] = phStats(db.BackendStats(), before)
				t.Logf("%v: %+v", f, reads[f])
			}
			if roots[vertex.FormatV1] != roots[vertex.FormatV2] {
				t.Fatalf("roots differ: v1 %v, v2 %v", roots[vertex.FormatV1], roots[vertex.FormatV2])
			}
			v1, v2 := reads[vertex.FormatV1], reads[vertex.FormatV2]
			if v1.RangeReads != 0 {
				t.Errorf("v1 made %d range reads, want 0", v1.RangeReads)
			}
			if v2.RangeReads == 0 {
				t.Errorf("v2 made no range reads")
			}
			if 2*(v2.PointReads+v2.RangeReads) > v1.PointReads {
				t.Errorf("v2 made %d point + %d range reads, v1 %d point reads: want v2 at most half", v2.PointReads, v2.RangeReads, v1.PointReads)
			}
		})
	}
}

// TestPersistChildKeys: with children's keys in branch records (the default), a
// cold reopened DB re-hashes an update by reading only the updated paths, in
// both layouts: fewer reads than without them (v2: siblings in one range read
// per branch; v1: one point read per sibling).
func TestPersistChildKeys(t *testing.T) {
	for _, f := range phFormats {
		reads := map[bool]uint64{}
		for _, noChild := range []bool{false, true} {
			s := newPhStore(t, "memory")
			s.noChildKeys = noChild
			db := s.open(f, 0)
			phBuild(t, db, 4000)
			db.Close()
			db = s.open(f, 0)
			before := db.BackendStats()
			fr := db.Begin()
			for i := 0; i < 300; i++ {
				if err := trie.G(fr).Put(phKey(i*13%4000), []byte("changed")); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := trie.G(fr).Hash(); err != nil {
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
