package trie_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/hexstate/hexstate/internal/trietest"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie"
)

// This file feeds hexstate bad input: corrupt vertex and admin records written
// straight into the store, a database of the other format, paths that are not a
// store, and malformed proofs. Every case must give a typed error and no panic.

// biProofTrie is a small trie with long and short keys and values, and keys
// that are prefixes of others, so proofs have hashed and embedded nodes,
// extensions and branch values.
func biProofTrie(t testing.TB) (*trie.Trie, [][]byte) {
	tr := trie.NewTrie()
	var keys [][]byte
	for i := 0; i < 300; i++ {
		k := trietest.GenKey(i)
		keys = append(keys, k)
		if err := tr.Put(k, trietest.GenValue(i, 0)); err != nil {
			t.Fatal(err)
		}
	}
	for _, kv := range [][2]string{{"do", "verb"}, {"dog", "puppy"}, {"doge", "coin"}, {"horse", "stallion"}} {
		keys = append(keys, []byte(kv[0]))
		if err := tr.Put([]byte(kv[0]), []byte(kv[1])); err != nil {
			t.Fatal(err)
		}
	}
	return tr, keys
}

// TestVerifyProofMalformed checks VerifyProof on real proofs cut, emptied,
// truncated and bit-flipped: never a panic, and either an error wrapping
// ErrBadProof or, for what still verifies, the true value.
func TestVerifyProofMalformed(t *testing.T) {
	tr, keys := biProofTrie(t)
	root := tr.Hash()
	absent := [][]byte{trietest.GenKey(5000), []byte("dogs"), []byte("d"), {}, trietest.GenKey(3)[:31]}
	wantErr := func(what string, key []byte, proof [][]byte) {
		t.Helper()
		got, err := biVerify(root, key, proof)
		if err == nil {
			want, _ := tr.Get(key)
			if !bytes.Equal(got, want) {
				t.Fatalf("%s: accepted with value %q, true value %q", what, got, want)
			}
			t.Fatalf("%s: accepted a damaged proof of %x", what, key)
		}
		if !errors.Is(err, trie.ErrBadProof) {
			t.Fatalf("%s: %v does not wrap ErrBadProof", what, err)
		}
	}
	for _, key := range append(slices.Clone(keys), absent...) {
		proof, err := tr.Prove(key)
		trietest.Must(t, err, "Prove(%x)", key)
		want, _ := tr.Get(key)
		got, err := biVerify(root, key, proof)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("VerifyProof of the real proof of %x = %q, %v; want %q", key, got, err, want)
		}
		wantErr("nil proof", key, nil)
		wantErr("empty proof", key, [][]byte{})
		wantErr("empty node", key, [][]byte{{}})
		wantErr("garbage node", key, [][]byte{{0xde, 0xad, 0xbe, 0xef}})
		wantErr("wrong root", key, proof[1:])
		for i := 1; i < len(proof); i++ {
			// Dropping an inner node loses the path, unless the key is absent
			// and its path leaves the trie above that node: then proof[:i] is
			// still a valid proof of absence, and must say so.
			if got, err := biVerify(root, key, proof[:i]); err == nil && (got != nil || want != nil) {
				t.Fatalf("proof of %x cut to %d of %d nodes accepted with %q", key, i, len(proof), got)
			} else if err != nil && !errors.Is(err, trie.ErrBadProof) {
				t.Fatalf("cut proof: %v does not wrap ErrBadProof", err)
			}
		}
		for i := range proof {
			for _, cut := range []int{0, 1, len(proof[i]) / 2, len(proof[i]) - 1} {
				p := slices.Clone(proof)
				p[i] = proof[i][:cut]
				biVerifyOK(t, tr, root, key, p, "node truncated")
			}
			p := slices.Clone(proof)
			p[i] = slices.Clone(proof[i])
			p[i][len(p[i])/2] ^= 0x01
			biVerifyOK(t, tr, root, key, p, "bit flipped")
		}
	}
}

// biVerifyOK checks VerifyProof's answer on a damaged proof: an error wrapping
// ErrBadProof, or (when the damage did not touch the key's path) the true value.
func biVerifyOK(t *testing.T, tr *trie.Trie, root hashkey.Hash, key []byte, proof [][]byte, what string) {
	t.Helper()
	got, err := biVerify(root, key, proof)
	if err != nil {
		if !errors.Is(err, trie.ErrBadProof) {
			t.Fatalf("%s: %v does not wrap ErrBadProof", what, err)
		}
		return
	}
	if want, _ := tr.Get(key); !bytes.Equal(got, want) {
		t.Fatalf("%s: proof of %x accepted with value %q, true value %q", what, key, got, want)
	}
}

// biVerify calls VerifyProof (a panic fails the test binary with its stack).
func biVerify(root hashkey.Hash, key []byte, proof [][]byte) ([]byte, error) {
	return trie.VerifyProof(root, key, proof)
}

// biPackProof packs a proof into one byte string for the fuzzer: each node as
// a 2-byte big-endian length and its bytes.
func biPackProof(proof [][]byte) []byte {
	var b []byte
	for _, n := range proof {
		b = binary.BigEndian.AppendUint16(b, uint16(len(n)))
		b = append(b, n...)
	}
	return b
}

func biUnpackProof(b []byte) [][]byte {
	var proof [][]byte
	for len(b) >= 2 {
		n := int(binary.BigEndian.Uint16(b))
		b = b[2:]
		n = min(n, len(b))
		proof = append(proof, b[:n])
		b = b[n:]
	}
	return proof
}

// FuzzVerifyProof feeds VerifyProof mutated proofs. With mode even the root is
// the real trie's, so anything accepted must give the key's true value (a
// mismatch is a forged proof); with mode odd the root is the hash of the first
// proof node, so the fuzzer controls the whole proof, and VerifyProof must just
// not panic and wrap ErrBadProof in its errors.
//
//	go test -run '^$' -fuzz FuzzVerifyProof -fuzztime 60s ./trie/
func FuzzVerifyProof(f *testing.F) {
	tr, keys := biProofTrie(f)
	root := tr.Hash()
	for i, key := range append(keys[:40:40], keys[len(keys)-4:]...) {
		proof, err := tr.Prove(key)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(byte(0), key, biPackProof(proof))
		f.Add(byte(1), key, biPackProof(proof[min(1, len(proof)-1):]))
		if i%8 == 0 {
			f.Add(byte(0), append(slices.Clone(key), 0x42), biPackProof(proof))
		}
	}
	f.Add(byte(0), []byte("dog"), []byte{})
	f.Fuzz(func(t *testing.T, mode byte, key, packed []byte) {
		proof := biUnpackProof(packed)
		r := root
		if mode%2 == 1 && len(proof) > 0 {
			r = hashkey.Keccak256(proof[0])
		}
		got, err := trie.VerifyProof(r, key, proof)
		if err != nil {
			if !errors.Is(err, trie.ErrBadProof) {
				t.Fatalf("error %v does not wrap ErrBadProof", err)
			}
			if got != nil {
				t.Fatalf("error %v with value %x", err, got)
			}
			return
		}
		if r == root {
			if want, _ := tr.Get(key); !bytes.Equal(got, want) {
				t.Fatalf("proof of %x accepted with value %x, true value %x", key, got, want)
			}
		}
	})
}
