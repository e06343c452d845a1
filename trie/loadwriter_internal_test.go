package trie

import (
	"bytes"
	"slices"
	"testing"

	"github.com/hexstate/hexstate/vertex"
	"github.com/holiman/uint256"
)

// TestLoadWarmsCacheWithinItsSize loads a state several times the size of
// the vertex cache. The first batch warms the cache with all its records;
// once the cache has dropped one to make room, only the account trie's
// branches are put, so none of the leaves written last is in the cache, and
// branches written last are.
func TestLoadWarmsCacheWithinItsSize(t *testing.T) {
	for _, f := range []vertex.Format{vertex.FormatV1, vertex.FormatV2} {
		t.Run(f.String(), func(t *testing.T) {
			db := fiOpenWith(t, &Options{Format: f, CacheBytes: 1 << 20})
			accs := make([]AccountLeaf, 30000)
			for i := range accs {
				accs[i] = AccountLeaf{AddrHash: fiAddr(i), Account: fiAcc(uint64(i + 1))}
				for s := range 3 {
					accs[i].Storage = append(accs[i].Storage, SlotLeaf{Hash: fiSlot(i*3 + s), Value: *uint256.NewInt(uint64(s + 1))})
				}
				slices.SortFunc(accs[i].Storage, func(a, b SlotLeaf) int { return bytes.Compare(a.Hash[:], b.Hash[:]) })
			}
			slices.SortFunc(accs, func(a, b AccountLeaf) int { return bytes.Compare(a.AddrHash[:], b.AddrHash[:]) })
			l, err := db.NewStateLoader()
			fiMust(t, err)
			for i := 0; i < len(accs); i += 1000 {
				fiMust(t, l.Add(accs[i:i+1000]))
			}
			_, err = l.Commit(0)
			fiMust(t, err)
			if db.CacheStats().Evicted == 0 {
				t.Fatal("the load fitted the cache: the test needs a larger one")
			}
			top := db.base.alloc.Top
			var leaves, branches, leavesCached, branchesCached int
			for id := top - 20000; id < top; id++ {
				rec, err := db.backend.Vertex(id)
				fiMust(t, err)
				if rec == nil {
					continue
				}
				cached := db.cache.Contains(id)
				switch vertex.RecordKind(rec) {
				case vertex.Leaf:
					leaves++
					if cached {
						leavesCached++
					}
				case vertex.Branch:
					branches++
					if cached {
						branchesCached++
					}
				}
			}
			if leaves == 0 || leavesCached != 0 {
				t.Errorf("of the last 20,000 IDs' %d leaves, %d are cached, want none", leaves, leavesCached)
			}
			if branchesCached == 0 {
				t.Errorf("of the last 20,000 IDs' %d branches, none is cached, want the account trie's", branches)
			}
			t.Logf("last 20,000 IDs: %d leaves, %d branches (%d cached)", leaves, branches, branchesCached)
		})
	}
}
