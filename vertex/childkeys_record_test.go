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

// TestBatchAppendRecord checks that a batch that strips children's keys
// stores a branch record with them as AppendWithoutChildKeys makes it, and
// any other record, or any record of a batch that does not strip, as it is,
// with RecordSize the length stored.
func TestBatchAppendRecord(t *testing.T) {
	keys := &[16]hashkey.Key{2: hashkey.HashKey(hashkey.EmptyCodeHash), 5: hashkey.HashKey(hashkey.EmptyRoot)}
	branch := Encode(nil, &Vertex{Kind: Branch, Used: 0x0024, Base: 1 << 20, Key: hashkey.HashKey(hashkey.EmptyRoot), ChildKeys: PackChildKeys(nil, 0x0024, keys)})
	if !HasChildKeys(branch) {
		t.Fatalf("sample branch %x has no child keys", branch)
	}
	for _, rec := range append([][]byte{branch}, func() (out [][]byte) {
		for _, v := range sampleVertices() {
			out = append(out, Encode(nil, v))
		}
		return out
	}()...) {
		for _, strip := range []bool{false, true} {
			b := &Batch{StripChildKeys: strip}
			want := rec
			if strip {
				want = AppendWithoutChildKeys(nil, rec)
			}
			got := b.AppendRecord([]byte{0xee}, rec)
			if got[0] != 0xee || !bytes.Equal(got[1:], want) {
				t.Fatalf("strip %v: AppendRecord(%x) = %x, want %x", strip, rec, got[1:], want)
			}
			if n := b.RecordSize(rec); n != len(want) {
				t.Fatalf("strip %v: RecordSize(%x) = %d, want %d", strip, rec, n, len(want))
			}
		}
	}
	if got := (&Batch{StripChildKeys: true}).RecordSize(branch); got >= len(branch) {
		t.Fatalf("stripped branch record of %d bytes, the record with keys %d", got, len(branch))
	}
}
