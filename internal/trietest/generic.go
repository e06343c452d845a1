package trietest

// Generic-key fixtures (KeyModel, GenKey, ApplyKeys, ...), backend record walks (Records, Reachable, CheckNoGarbage) and the BlockState model.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/holiman/uint256"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// GenKey is generic key i: 32 bytes (keccak of i), except that every 16th key is
// 2..4 bytes long (unique by its first two bytes) and the key before it extends
// it to 32 bytes, so that some keys are prefixes of others (branch values) and
// some nodes are small enough to be embedded in their parents.
func GenKey(i int) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(i))
	h := hashkey.Keccak256(b[:])
	switch i % 16 {
	case 15:
		return append([]byte{byte(i >> 12), byte(i >> 4)}, h[:i/16%3]...)
	case 14:
		k := GenKey(i + 1)
		return append(k, h[:32-len(k)]...)
	}
	return h[:]
}

// GenValue is the value of key i at version ver: some short (embedded leaves),
// most 40..100 bytes; it names i so a record can be traced back to its key.
func GenValue(i, ver int) []byte {
	v := fmt.Appendf(nil, "k%d.v%d", i, ver)
	if (i+ver)%5 != 0 {
		v = append(v, bytes.Repeat([]byte{byte('a' + (i+ver)%26)}, 32+(i*7+ver)%60)...)
	}
	return v
}

// KeyModel is the expected content of a generic trie: key index -> value.
type KeyModel map[int][]byte

// ApplyKeys applies ops (>= 0: put a new version of key op, < 0: delete key -op-1)
// to fr and model.
func ApplyKeys(t testing.TB, fr *trie.Frame, m KeyModel, ops []int, ver int) {
	t.Helper()
	for _, op := range ops {
		if op >= 0 {
			v := GenValue(op, ver)
			Must(t, G(fr).Put(GenKey(op), v), "Put(key %d)", op)
			m[op] = v
		} else {
			Must(t, G(fr).Delete(GenKey(-op-1)), "Delete(key %d)", -op-1)
			delete(m, -op-1)
		}
	}
}

// KeyOps returns n deterministic random ops over keys [0, universe), deleting
// with probability pdel percent.
func KeyOps(seed uint64, n, universe, pdel int) []int {
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

// CheckKeys checks that fr holds exactly m (every key in [0, universe) is
// present with its value or absent), and that the iterator yields m's keys.
func CheckKeys(t testing.TB, fr *trie.Frame, m KeyModel, universe int) {
	t.Helper()
	bad := 0
	for i := 0; i < universe && bad < 5; i++ {
		got, err := G(fr).Get(GenKey(i))
		if err != nil {
			t.Fatalf("Get(key %d): %v", i, err)
		}
		if want := m[i]; !bytes.Equal(got, want) {
			t.Errorf("Get(key %d) = %q, want %q", i, got, want)
			bad++
		}
	}
	n := 0
	it := G(fr).Iterator(nil)
	for it.Next() {
		n++
	}
	Must(t, it.Err(), "iterating")
	if n != len(m) {
		t.Errorf("iterator yields %d keys, want %d", n, len(m))
	}
}

// KeysRoot computes the root m must have, on an independent in-memory trie.
func KeysRoot(t testing.TB, m KeyModel) hashkey.Hash {
	t.Helper()
	tr := trie.NewTrie()
	for i, v := range m {
		Must(t, tr.Put(GenKey(i), v), "reference Put")
	}
	return tr.Hash()
}

// AdminTop reads the allocator top from the admin record.
func AdminTop(t testing.TB, b trie.Backend) vertex.ID {
	t.Helper()
	a, err := b.Admin()
	Must(t, err, "Admin")
	top, _ := AdminFields(t, a)
	return top
}

// AdminFields returns the allocator top and the block of admin record rec
// (docs/format.md §3: "hxst" | format u8 | records u8 | top u64 | block u64 |
// root [32] | crc32c u32; revision 1 without the records byte).
func AdminFields(t testing.TB, rec []byte) (top vertex.ID, block uint64) {
	t.Helper()
	off := 0
	switch {
	case len(rec) == 58 && string(rec[:4]) == "hxst":
		off = 6
	case len(rec) == 57 && string(rec[:4]) == "hxst":
		off = 5
	default:
		t.Fatalf("not an admin record (58 bytes, or 57 in revision 1): %x", rec)
	}
	return vertex.ID(binary.BigEndian.Uint64(rec[off:])), binary.BigEndian.Uint64(rec[off+8:])
}

// Records returns every vertex record in b (IDs 1..top of the admin record).
func Records(t testing.TB, b trie.Backend) map[vertex.ID][]byte {
	t.Helper()
	top := AdminTop(t, b)
	recs := map[vertex.ID][]byte{}
	err := b.VertexRange(vertex.RootID, int(top), func(id vertex.ID, rec []byte) error {
		recs[id] = slices.Clone(rec)
		return nil
	})
	Must(t, err, "VertexRange")
	return recs
}

// SameRecords fails t unless a and b hold the same vertex records, byte for
// byte, and the same admin record.
func SameRecords(t testing.TB, a, b trie.Backend) {
	t.Helper()
	ra, rb := Records(t, a), Records(t, b)
	if len(ra) != len(rb) {
		t.Fatalf("%d records, want %d", len(ra), len(rb))
	}
	for id, r := range rb {
		if !bytes.Equal(ra[id], r) {
			t.Fatalf("record %d: %x, want %x", id, ra[id], r)
		}
	}
	aa, _ := a.Admin()
	ab, _ := b.Admin()
	if !bytes.Equal(aa, ab) {
		t.Fatalf("admin record %x, want %x", aa, ab)
	}
}

// SameLeaves fails t unless a and b hold the same leaf-index entries (the
// marker included).
func SameLeaves(t testing.TB, a, b trie.Backend) {
	t.Helper()
	leaves := func(x trie.Backend) [][2][]byte {
		var out [][2][]byte
		err := x.EachLeaf(nil, func(k, v []byte) error {
			out = append(out, [2][]byte{bytes.Clone(k), bytes.Clone(v)})
			return nil
		})
		Must(t, err, "EachLeaf")
		return out
	}
	la, lb := leaves(a), leaves(b)
	if len(la) != len(lb) {
		t.Fatalf("%d leaf-index entries, want %d", len(la), len(lb))
	}
	for i := range lb {
		if !bytes.Equal(la[i][0], lb[i][0]) || !bytes.Equal(la[i][1], lb[i][1]) {
			t.Fatalf("leaf-index entry %d: %x = %x, want %x = %x", i, la[i][0], la[i][1], lb[i][0], lb[i][1])
		}
	}
}

// Reachable returns the IDs reachable from the root in recs: branch children
// and account storage tries. It fails t when a reachable ID has no record or an
// undecodable one.
func Reachable(t testing.TB, recs map[vertex.ID][]byte) map[vertex.ID]*vertex.Vertex {
	t.Helper()
	seen := map[vertex.ID]*vertex.Vertex{}
	var walk func(id vertex.ID)
	walk = func(id vertex.ID) {
		rec, ok := recs[id]
		if !ok {
			t.Fatalf("vertex %d is referenced but has no record", id)
		}
		v, err := vertex.Decode(rec)
		Must(t, err, "decoding vertex %d", id)
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

// CheckNoGarbage fails t unless every record in b is reachable from the root:
// deleted and replaced vertices must be gone from the store.
func CheckNoGarbage(t testing.TB, b trie.Backend) map[vertex.ID]*vertex.Vertex {
	t.Helper()
	recs := Records(t, b)
	live := Reachable(t, recs)
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

// StatsDiff subtracts two backend read counters.
func StatsDiff(a, b vertex.ReadStats) vertex.ReadStats {
	return vertex.ReadStats{PointReads: a.PointReads - b.PointReads, RangeReads: a.RangeReads - b.RangeReads, BatchReads: a.BatchReads - b.BatchReads, BatchKeys: a.BatchKeys - b.BatchKeys, Records: a.Records - b.Records}
}

func FrameHash(t testing.TB, fr *trie.Frame) hashkey.Hash {
	t.Helper()
	h, err := G(fr).Hash()
	Must(t, err, "Hash")
	return h
}

func DBRoot(t testing.TB, db *trie.DB) hashkey.Hash {
	t.Helper()
	h, err := db.StateRoot()
	Must(t, err, "StateRoot")
	return h
}

const Universe = 2000

// BuildKeys persists block 1 with keys [0, n) on a fresh DB and returns the model
// and root.
func BuildKeys(t testing.TB, db *trie.DB, n int) (KeyModel, hashkey.Hash) {
	t.Helper()
	m := KeyModel{}
	fr := db.Begin()
	ops := make([]int, n)
	for i := range ops {
		ops[i] = i
	}
	ApplyKeys(t, fr, m, ops, 0)
	root := FrameHash(t, fr)
	Must(t, db.Persist(fr, 1), "Persist(1)")
	return m, root
}

// BlockAccount is a state-test account: index i, version ver.
func BlockAccount(i, ver int) trie.Account {
	a := trie.Account{Nonce: uint64(i*3 + ver)}
	a.Balance.SetUint64(uint64(i)*1_000_000_007 + uint64(ver))
	if i%4 == 1 {
		a.CodeHash = hashkey.Keccak256([]byte{byte(i)})
	}
	return a
}

func BlockAddr(i int) hashkey.Hash { return hashkey.Keccak256([]byte(fmt.Sprintf("addr%d", i))) }

func BlockSlot(j int) hashkey.Hash { return hashkey.Keccak256([]byte(fmt.Sprintf("slot%d", j))) }

// BlockState is the expected state: accounts and their storage.
type BlockState struct {
	Accts map[int]trie.Account
	Slots map[int]map[int]uint64
}

func (st *BlockState) Apply(t testing.TB, fr *trie.Frame, r *rand.Rand, ver, nacct int) {
	t.Helper()
	for i := 0; i < nacct; i++ {
		a := r.IntN(200)
		switch op := r.IntN(10); {
		case op == 0: // delete the account and its storage
			Must(t, fr.DeleteAccount(BlockAddr(a)), "DeleteAccount(%d)", a)
			delete(st.Accts, a)
			delete(st.Slots, a)
		default:
			acc := BlockAccount(a, ver)
			Must(t, fr.UpdateAccount(BlockAddr(a), acc), "UpdateAccount(%d)", a)
			acc.CodeHash = codeHashOrEmpty(acc.CodeHash)
			st.Accts[a] = acc
			if st.Slots[a] == nil {
				st.Slots[a] = map[int]uint64{}
			}
			for k := r.IntN(12); k > 0; k-- {
				j := r.IntN(40)
				val := uint64(0)
				if r.IntN(4) != 0 {
					val = r.Uint64N(1<<40) + 1
				}
				Must(t, fr.UpdateStorage(BlockAddr(a), BlockSlot(j), uint256.NewInt(val)), "UpdateStorage(%d, %d)", a, j)
				if val == 0 {
					delete(st.Slots[a], j)
				} else {
					st.Slots[a][j] = val
				}
			}
		}
	}
}

func codeHashOrEmpty(h hashkey.Hash) hashkey.Hash {
	if h == (hashkey.Hash{}) {
		return hashkey.EmptyCodeHash
	}
	return h
}

func (st *BlockState) Check(t testing.TB, fr *trie.Frame, storageRoots map[int]hashkey.Hash) {
	t.Helper()
	for a := 0; a < 200; a++ {
		got, ok, err := fr.Account(BlockAddr(a))
		Must(t, err, "Account(%d)", a)
		want, wantOK := st.Accts[a]
		if ok != wantOK || (ok && (got.Nonce != want.Nonce || got.Balance != want.Balance || got.CodeHash != want.CodeHash)) {
			t.Fatalf("Account(%d) = %+v, %v; want %+v, %v", a, got, ok, want, wantOK)
		}
		for j := 0; j < 40; j++ {
			v, err := fr.Storage(BlockAddr(a), BlockSlot(j))
			Must(t, err, "Storage(%d, %d)", a, j)
			if want := st.Slots[a][j]; !wantOK && !v.IsZero() || wantOK && v.Uint64() != want {
				t.Fatalf("Storage(%d, %d) = %v, want %d", a, j, &v, want)
			}
		}
		if storageRoots != nil {
			sr, err := fr.StorageRoot(BlockAddr(a))
			Must(t, err, "StorageRoot(%d)", a)
			if sr != storageRoots[a] {
				t.Fatalf("StorageRoot(%d) = %v, want %v", a, sr, storageRoots[a])
			}
		}
	}
}

func (st *BlockState) StorageRoots(t testing.TB, fr *trie.Frame) map[int]hashkey.Hash {
	t.Helper()
	m := map[int]hashkey.Hash{}
	for a := 0; a < 200; a++ {
		sr, err := fr.StorageRoot(BlockAddr(a))
		Must(t, err, "StorageRoot(%d)", a)
		m[a] = sr
	}
	return m
}
