package vertex

import (
	"bytes"
	"errors"
	"testing"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/holiman/uint256"
)

func sampleVertices() []*Vertex {
	kids := [16]ID{3: 77, 9: 1 << 40}
	return []*Vertex{
		{Kind: Leaf, Payload: RawPayload, Path: []byte{1, 2, 3}, Value: []byte("dog")},
		{Kind: Leaf, Payload: RawPayload, Value: []byte{0}},
		{Kind: Leaf, Payload: SlotPayload, Path: []byte{0xa}, Value: []byte{0x01, 0x00}},
		{Kind: Leaf, Payload: AccountPayload, Path: []byte{5, 5}, Acc: &Account{CodeHash: hashkey.EmptyCodeHash}},
		{Kind: Leaf, Payload: AccountPayload, Acc: &Account{Nonce: 7, Balance: *uint256.NewInt(1e18), CodeHash: hashkey.Keccak256([]byte{1}), Storage: 300}},
		{Kind: Leaf, Payload: AccountPayload, Path: []byte{1}, Acc: &Account{CodeHash: hashkey.EmptyCodeHash, Storage: 1 << 33, StorageKey: hashkey.Keccak256([]byte{2})}},
		{Kind: Branch, Used: 0x0101, Base: 1234},
		{Kind: Branch, Used: 0x0201, Base: 2, Path: []byte{1, 2, 3, 4, 5}, Key: hashkey.HashKey(hashkey.EmptyRoot)},
		{Kind: Branch, Used: 0x8000, Base: 99, Payload: RawPayload, Value: []byte("verb")},
		{Kind: Branch, Used: 0x0208, Kids: &kids, Path: []byte{7}},
		{Kind: Branch, Used: 0x0011, Base: 40, Key: hashkey.HashKey(hashkey.EmptyRoot), ChildKeys: PackChildKeys(nil, 0x0011, &[16]hashkey.Key{0: hashkey.HashKey(hashkey.EmptyCodeHash), 4: hashkey.KeyOf([]byte{0xc2, 0x20, 0x01})})},
	}
}

func TestRoundTrip(t *testing.T) {
	for i, v := range sampleVertices() {
		rec := Encode(nil, v)
		got, err := Decode(rec)
		if err != nil {
			t.Fatalf("vertex %d: decode %x: %v", i, rec, err)
		}
		if again := Encode(nil, got); !bytes.Equal(again, rec) {
			t.Fatalf("vertex %d: re-encoded %x, want %x", i, again, rec)
		}
		if got.Kind != v.Kind || got.Used != v.Used || got.Base != v.Base || !bytes.Equal(got.Path, v.Path) || !bytes.Equal(got.Value, v.Value) {
			t.Fatalf("vertex %d: decoded %+v, want %+v", i, got, v)
		}
		if (got.Acc == nil) != (v.Acc == nil) || got.Acc != nil && *got.Acc != *v.Acc {
			t.Fatalf("vertex %d: decoded account %+v, want %+v", i, got.Acc, v.Acc)
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	good := Encode(nil, sampleVertices()[4])
	cases := map[string][]byte{
		"empty":            nil,
		"reserved tag":     {0xe1},
		"truncated":        good[:len(good)-1],
		"trailing":         append(append([]byte(nil), good...), 0),
		"leaf no payload":  {tagLeaf, 1, 0x20},
		"one-child branch": Encode(nil, &Vertex{Kind: Branch, Used: 1, Base: 5}),
		"zero base":        Encode(nil, &Vertex{Kind: Branch, Used: 3, Base: 0}),
		"leading zero":     {tagBranchV2, 0, 3, 2, 0, 5, 1, 0},
		"leaf flag wrong":  {tagLeaf | byte(RawPayload)<<2, 1, 0x00, 1, 'x'},
		"empty raw":        {tagLeaf | byte(RawPayload)<<2, 1, 0x20, 0},
		"zero slot":        {tagLeaf | byte(SlotPayload)<<2, 1, 0x20, 0},
		"bad hp flag":      {tagLeaf | byte(RawPayload)<<2, 1, 0x40, 1, 'x'},
		// An account leaf at an empty path: mask, then its fields.
		"root key, no storage": append([]byte{tagLeaf | byte(AccountPayload)<<2, 1, 0x20, accRootKey}, make([]byte, 32)...),
		"zero root key":        append([]byte{tagLeaf | byte(AccountPayload)<<2, 1, 0x20, accStorage | accRootKey, 1, 5}, make([]byte, 32)...),
		"reserved mask bit":    {tagLeaf | byte(AccountPayload)<<2, 1, 0x20, 1 << 5},
	}
	for name, b := range cases {
		if _, err := Decode(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s (%x): got %v, want ErrCorrupt", name, b, err)
		}
	}
}

// FuzzDecode proves the decoder never panics and is canonical: whatever it accepts
// re-encodes to the same bytes.
func FuzzDecode(f *testing.F) {
	for _, v := range sampleVertices() {
		f.Add(Encode(nil, v))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		if again := Encode(nil, v); !bytes.Equal(again, b) {
			t.Fatalf("accepted %x but re-encodes to %x", b, again)
		}
	})
}

func TestParseRecords(t *testing.T) {
	for _, r := range []Records{KeysOnce, ChildKeyCopies} {
		if got, err := ParseRecords(r.String()); err != nil || got != r {
			t.Fatalf("ParseRecords(%q) = %v, %v", r.String(), got, err)
		}
	}
	if got, err := ParseRecords(""); err != nil || got != 0 {
		t.Fatalf(`ParseRecords("") = %v, %v`, got, err)
	}
	if _, err := ParseRecords("copies"); err == nil {
		t.Fatal("an unknown variant parsed")
	}
}
