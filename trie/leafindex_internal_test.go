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
