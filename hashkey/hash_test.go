package hashkey

import (
	"bytes"
	"testing"
)

// TestHasherMatchesKeccak256: a reused Hasher gives the same digests and keys as
// the pooled functions, for short (embedded) and long inputs.
func TestHasherMatchesKeccak256(t *testing.T) {
	h := NewHasher()
	for n := 0; n < 300; n += 7 {
		data := bytes.Repeat([]byte{byte(n)}, n)
		if got, want := h.Sum(data), Keccak256(data); got != want {
			t.Fatalf("len %d: Sum %v, Keccak256 %v", n, got, want)
		}
		if got, want := h.KeyOf(data), KeyOf(data); got != want {
			t.Fatalf("len %d: KeyOf %v, want %v", n, got, want)
		}
	}
	if h.Sum(nil) != EmptyCodeHash {
		t.Fatal("Sum(nil) is not keccak of nothing")
	}
}
