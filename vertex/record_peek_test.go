package vertex

import (
	"errors"
	"testing"
)

// TestAccountStorage: for every sample record AccountStorage agrees with
// Decode on the storage ID and whether the root is recorded, answers ok for
// account leaves only, fails (not panics) on every truncation, and
// allocates nothing.
func TestAccountStorage(t *testing.T) {
	for i, v := range sampleVertices() {
		rec := Encode(nil, v)
		s, recorded, ok := AccountStorage(rec)
		isAccount := v.Kind == Leaf && v.Payload == AccountPayload
		if ok != isAccount {
			t.Fatalf("vertex %d: ok %v for an account leaf: %v", i, ok, isAccount)
		}
		if isAccount && (s != v.Acc.Storage || recorded != (v.Acc.StorageKey != [32]byte{})) {
			t.Fatalf("vertex %d: storage %d, recorded %v; want %d, %v", i, s, recorded, v.Acc.Storage, v.Acc.StorageKey != [32]byte{})
		}
		if !isAccount {
			continue
		}
		for n := range len(rec) {
			if _, err := Decode(rec[:n]); err == nil {
				continue
			}
			// A truncation that still holds the fields may be ok; one that
			// does not must say so.
			if s, _, ok := AccountStorage(rec[:n]); ok && s != v.Acc.Storage {
				t.Fatalf("vertex %d cut at %d: storage %d, want %d or not ok", i, n, s, v.Acc.Storage)
			}
		}
		if a := testing.AllocsPerRun(100, func() { AccountStorage(rec) }); a != 0 {
			t.Fatalf("vertex %d: %v allocations per call", i, a)
		}
	}
}

// FuzzAccountStorage: whatever Decode accepts, AccountStorage reads the same
// storage fields; on anything else it never panics.
func FuzzAccountStorage(f *testing.F) {
	for _, v := range sampleVertices() {
		f.Add(Encode(nil, v))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, recorded, ok := AccountStorage(b)
		v, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		isAccount := v.Kind == Leaf && v.Payload == AccountPayload
		if ok != isAccount || isAccount && (s != v.Acc.Storage || recorded != (v.Acc.StorageKey != [32]byte{})) {
			t.Fatalf("%x: AccountStorage %d, %v, %v; decoded %+v", b, s, recorded, ok, v)
		}
	})
}

// TestHasKey: a record stores its key exactly when it is a branch's whose
// key is a 32-byte hash.
func TestHasKey(t *testing.T) {
	for i, v := range sampleVertices() {
		rec := Encode(nil, v)
		if want := v.Kind == Branch && v.Key.IsHash(); HasKey(rec) != want {
			t.Fatalf("vertex %d: HasKey(%x) = %v, want %v", i, rec, HasKey(rec), want)
		}
	}
	if HasKey(nil) {
		t.Fatal("HasKey(nil)")
	}
}
