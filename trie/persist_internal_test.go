package trie

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/hexstate/hexstate/vertex"
)

// TestSortChanges: the radix sort orders changes by ID and keeps an ID's
// versions in their input order (oldest frame first), across IDs of one to
// three 16-bit digits and inputs below the comparison-sort cutoff.
func TestSortChanges(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct{ n, top int }{{100, 50}, {5000, 1 << 12}, {20000, 1 << 30}, {20000, 1 << 40}} {
		cs := make([]change, tc.n)
		for i := range cs { // a version's identity: its place in the input
			cs[i] = change{id: vertex.ID(r.Int64N(int64(tc.top))), store: uint32(i)}
		}
		var pace pacer
		got := sortChanges(slices.Clone(cs), make([]change, len(cs)), &pace)
		want := slices.Clone(cs)
		slices.SortStableFunc(want, func(a, b change) int { return cmp.Compare(a.id, b.id) })
		if !slices.EqualFunc(got, want, func(a, b change) bool { return a == b }) {
			t.Fatalf("%d changes below %d: radix order differs from a stable sort", tc.n, tc.top)
		}
	}
}
