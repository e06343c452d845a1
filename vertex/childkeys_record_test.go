package vertex

import (
	"bytes"
	"testing"

	"github.com/hexstate/hexstate/hashkey"
)

// TestAppendWithoutChildKeys checks that dropping the children's keys from a
// record gives the record Encode makes without them, for branches of both
// formats with and without child keys, and for other records unchanged, and
// that ChildKeysSize is the number of bytes dropped.
func TestAppendWithoutChildKeys(t *testing.T) {
	keys := &[16]hashkey.Key{0: hashkey.HashKey(hashkey.EmptyCodeHash), 3: hashkey.KeyOf([]byte{0xc2, 0x20, 0x01}), 9: hashkey.HashKey(hashkey.EmptyRoot)}
	kids := [16]ID{0: 300, 3: 1 << 40, 9: 7}
	vs := append(sampleVertices(),
		&Vertex{Kind: Branch, Used: 0x0209, Kids: &kids, Path: []byte{1, 2}, Key: hashkey.HashKey(hashkey.EmptyRoot), ChildKeys: PackChildKeys(nil, 0x0209, keys)},
		&Vertex{Kind: Branch, Used: 0x0209, Base: 1 << 33, Payload: RawPayload, Value: []byte("v"), Key: hashkey.HashKey(hashkey.EmptyRoot), ChildKeys: PackChildKeys(nil, 0x0209, keys)},
	)
	withKeys := 0
	for i, v := range vs {
		rec := Encode(nil, v)
		bare := *v
		bare.ChildKeys = nil
		want := Encode(nil, &bare)
		if HasChildKeys(rec) != (v.ChildKeys != nil && v.Key.IsHash()) {
			t.Fatalf("vertex %d: HasChildKeys(%x) = %v", i, rec, HasChildKeys(rec))
		}
		if HasChildKeys(rec) {
			withKeys++
		}
		if got := AppendWithoutChildKeys([]byte{0xee}, rec); !bytes.Equal(got[1:], want) || got[0] != 0xee {
			t.Fatalf("vertex %d: without child keys %x, want %x", i, got[1:], want)
		}
		if n := ChildKeysSize(rec); n != len(rec)-len(want) {
			t.Fatalf("vertex %d: ChildKeysSize = %d, want %d", i, n, len(rec)-len(want))
		}
	}
	if withKeys != 3 {
		t.Fatalf("%d samples with child keys, want 3", withKeys)
	}
}
