package trie_test

import (
	"math/rand"
	"testing"

	"github.com/hexstate/hexstate/trie"
)

func randKVs(n int, seed int64) (keys, values [][]byte) {
	rng := rand.New(rand.NewSource(seed))
	keys, values = make([][]byte, n), make([][]byte, n)
	for i := range keys {
		keys[i] = make([]byte, 32)
		values[i] = make([]byte, 80)
		rng.Read(keys[i])
		rng.Read(values[i])
	}
	return keys, values
}

// BenchmarkPut inserts fresh random 32-byte keys with 80-byte values.
func BenchmarkPut(b *testing.B) {
	keys, values := randKVs(1<<16, 1)
	tr := trie.NewTrie()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%len(keys) == 0 && i > 0 {
			b.StopTimer()
			tr = trie.NewTrie()
			b.StartTimer()
		}
		tr.Put(keys[i%len(keys)], values[i%len(keys)])
	}
}

// BenchmarkRoot100k builds a trie of 100k random keys and hashes it.
func BenchmarkRoot100k(b *testing.B) {
	keys, values := randKVs(100_000, 2)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		tr := trie.NewTrie()
		for j := range keys {
			tr.Put(keys[j], values[j])
		}
		tr.Hash()
	}
}

// BenchmarkUpdate1kOf1M updates 1,000 random keys of a 1M-key trie and re-hashes.
func BenchmarkUpdate1kOf1M(b *testing.B) {
	keys, values := randKVs(1_000_000, 3)
	tr := trie.NewTrie()
	for i := range keys {
		tr.Put(keys[i], values[i])
	}
	tr.Hash()
	rng := rand.New(rand.NewSource(4))
	val := make([]byte, 80)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := 0; j < 1000; j++ {
			rng.Read(val)
			tr.Put(keys[rng.Intn(len(keys))], val)
		}
		tr.Hash()
	}
}
