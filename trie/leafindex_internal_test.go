package trie

import (
	"encoding/hex"
	"testing"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/vertex"
	"github.com/holiman/uint256"
)

// TestLeafValueBytes pins the leaf index's values to docs/format.md §10.
func TestLeafValueBytes(t *testing.T) {
	acc := vertex.Account{Nonce: 7, CodeHash: hashkey.EmptyCodeHash, Storage: 300}
	acc.Balance.Set(uint256.NewInt(1_000_000_000_000_000_000))
	v := vertex.Vertex{Kind: vertex.Leaf, Payload: vertex.AccountPayload, Path: []byte{5, 5}, Acc: &acc}
	if got := hex.EncodeToString(leafValue(nil, &v)); got != "090120030107080de0b6b3a7640000" {
		t.Errorf("account value %s", got)
	}
	s := vertex.Vertex{Kind: vertex.Leaf, Payload: vertex.SlotPayload, Path: []byte{0xa}, Value: []byte{1, 0}}
	if got := hex.EncodeToString(leafValue(nil, &s)); got != "0d0120020100" {
		t.Errorf("slot value %s", got)
	}
	if _, err := decodeLeafValue(nil, leafValue(nil, &s), vertex.AccountPayload); err == nil {
		t.Error("a slot value decoded as an account")
	}
	if _, err := decodeLeafValue(nil, vertex.Encode(nil, &v), vertex.AccountPayload); err == nil {
		t.Error("an account record with a path and a storage ID decoded as an index value")
	}
}

// TestMergeLeafChanges: the persist's index changes come out in key order,
// each key once, a put winning over a deletion of its key, from deletions in
// unsorted runs with repeats; merged in the puts' own array when it has room
// (leaving the deletions alone), or in a new one.
func TestMergeLeafChanges(t *testing.T) {
	key := func(b ...byte) []byte { return b }
	want := []string{"01-", "02-", "03+", "04-", "07+", "08+", "09-", "0a+"}
	for _, room := range []int{0, 4, 10} {
		dels := []vertex.LeafEntry{{Key: key(1)}, {Key: key(4)}, {Key: key(9)}, {Key: key(2)}, {Key: key(4)}, {Key: key(7)}}
		puts := append(make([]vertex.LeafEntry, 0, 4+room), vertex.LeafEntry{Key: key(3), Val: key(30)}, vertex.LeafEntry{Key: key(7), Val: key(70)}, vertex.LeafEntry{Key: key(8), Val: key(80)}, vertex.LeafEntry{Key: key(10), Val: key(100)})
		grown := false
		got := mergeLeafChanges(puts, dels, func(n int) []vertex.LeafEntry {
			grown = true
			return make([]vertex.LeafEntry, 0, n)
		})
		if inPlace := room >= 5; grown == inPlace { // 5 distinct deletions, one of a key put
			t.Errorf("room for %d more: merged in a new array %v, want %v", room, grown, !inPlace)
		}
		if len(got) != len(want) {
			t.Fatalf("room for %d more: got %d entries, want %d: %v", room, len(got), len(want), got)
		}
		for i, e := range got {
			s := hex.EncodeToString(e.Key) + "-"
			if e.Val != nil {
				s = hex.EncodeToString(e.Key) + "+"
			}
			if s != want[i] {
				t.Errorf("room for %d more: entry %d = %s, want %s", room, i, s, want[i])
			}
		}
	}
}
