package build

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie/internal/nodeenc"
	"github.com/hexstate/hexstate/vertex"
)

// TestStateResumes builds a trie of random keys (some of them accounts with
// a storage ID) in one go, and again saving the builder's state after each
// key in turn and going on in a new builder restored from it: the records
// emitted and the root are the same, and every vertex but the top is
// emitted with an ID above those emitted before it.
func TestStateResumes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([][]byte, 300)
	for i := range keys {
		var h [32]byte
		for j := range h {
			h[j] = byte(rng.Uint32())
		}
		if i%7 == 3 { // share long prefixes with the key before
			copy(h[:20], keys[i-1][:20])
		}
		keys[i] = h[:]
	}
	slices.SortFunc(keys, bytes.Compare)
	keys = slices.CompactFunc(keys, bytes.Equal)
	for _, f := range []vertex.Format{vertex.FormatV1, vertex.FormatV2} {
		want, wantRoot := buildKeys(t, f, keys, -1)
		for _, stop := range []int{0, 1, 2, 17, len(keys) / 2, len(keys) - 1} {
			got, root := buildKeys(t, f, keys, stop)
			if root != wantRoot || len(got) != len(want) {
				t.Fatalf("%v, stopped after key %d: root %v with %d records, want %v with %d", f, stop, root, len(got), wantRoot, len(want))
			}
			for id, rec := range want {
				if !bytes.Equal(got[id], rec) {
					t.Fatalf("%v, stopped after key %d: record %d differs:\n%x\n%x", f, stop, id, got[id], rec)
				}
			}
		}
	}
}

// buildKeys builds keys (account leaves; every third with a storage ID) in
// format f and returns the records emitted and the root; after key stop
// (when not negative) it saves the state and goes on in a new builder.
func buildKeys(t *testing.T, f vertex.Format, keys [][]byte, stop int) (map[vertex.ID][]byte, hashkey.Hash) {
	t.Helper()
	recs := map[vertex.ID][]byte{}
	var last vertex.ID
	emit := func(id vertex.ID, v *vertex.Vertex) error {
		if id != vertex.RootID && id <= last {
			t.Fatalf("%v: vertex %d emitted after vertex %d", f, id, last)
		}
		last = max(last, id)
		recs[id] = vertex.Encode(nil, v)
		return nil
	}
	alloc := vertex.Allocator{Top: vertex.RootID}
	var enc nodeenc.Encoder
	b := New(f, &alloc, &enc, emit)
	b.Reset(vertex.RootID, 0)
	for i, k := range keys {
		acc := vertex.Account{Nonce: uint64(i), CodeHash: hashkey.EmptyCodeHash}
		if err := b.Add(hashkey.AppendNibbles(nil, k), vertex.AccountPayload, nil, &acc); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			b.SetStorage(b.Alloc().Take(1), hashkey.Hash{byte(i)})
		}
		if i == stop {
			st := b.AppendState([]byte("x"))
			alloc2 := alloc
			b = New(f, &alloc2, &enc, emit)
			b.Reset(vertex.RootID, 0)
			rest, err := b.RestoreState(st[1:])
			if err != nil || len(rest) != 0 {
				t.Fatalf("RestoreState: %v, %d bytes left", err, len(rest))
			}
			other := New(3-f, &alloc2, &enc, emit)
			if _, err := other.RestoreState(st[1:]); !errors.Is(err, ErrState) {
				t.Fatalf("state restored into a builder of the other format: %v", err)
			}
			for n := 1; n < len(st); n++ { // every truncation fails, none panics
				if _, err := b.RestoreState(st[1:n]); !errors.Is(err, ErrState) {
					t.Fatalf("state truncated to %d bytes: %v", n-1, err)
				}
			}
			for n := 1; n < len(st); n++ { // flipped bytes may restore, but never panic
				bad := slices.Clone(st[1:])
				bad[n-1] ^= 0xa5
				_, _ = b.RestoreState(bad)
			}
			if _, err := b.RestoreState(st[1:]); err != nil {
				t.Fatal(err)
			}
		}
	}
	id, k, err := b.Finish()
	if err != nil || id != vertex.RootID {
		t.Fatalf("Finish: %v, the top at %d", err, id)
	}
	return recs, k.Hash()
}
