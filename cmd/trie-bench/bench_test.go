package main

import (
	"math/rand/v2"
	"sync"
	"testing"

	gethtrie "github.com/ethereum/go-ethereum/trie"
	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// benchTrie is what the benchmarks need from an implementation.
type benchTrie interface {
	Put(key, value []byte) error
	Hash() hashkey.Hash
	Prove(key []byte) ([][]byte, error)
}

type gethBench struct{ t *gethtrie.Trie }

func (g gethBench) Put(k, v []byte) error            { return g.t.Update(k, v) }
func (g gethBench) Hash() hashkey.Hash               { return hashkey.Hash(g.t.Hash()) }
func (g gethBench) Prove(k []byte) ([][]byte, error) { return gethProve(g.t, k) }
func hexstateImpl(f vertex.Format) func() benchTrie {
	return func() benchTrie { return trie.NewTrieFormat(f) }
}
func gethImpl() benchTrie { return gethBench{newGethTrie()} }

// impls are run side by side as sub-benchmarks "impl=<name>" so that benchstat
// can put them in columns (benchstat -col /impl).
var impls = []struct {
	name string
	new  func() benchTrie
}{
	{"hexstate-v2", hexstateImpl(vertex.FormatV2)},
	{"hexstate-v1", hexstateImpl(vertex.FormatV1)},
	{"geth", gethImpl},
}

const benchValueLen = 80

// benchData is a deterministic set of random 32-byte keys and ~80-byte values.
type benchData struct {
	keys [][]byte
	vals [][]byte // a pool of distinct values, used round-robin
}

var (
	dataMu    sync.Mutex
	dataCache = map[int]*benchData{}
)

func getBenchData(n int) *benchData {
	dataMu.Lock()
	defer dataMu.Unlock()
	if d := dataCache[n]; d != nil {
		return d
	}
	r := rand.New(rand.NewPCG(uint64(n), 7))
	d := &benchData{keys: make([][]byte, n), vals: make([][]byte, 1<<14)}
	for i := range d.keys {
		d.keys[i] = randBytes(r, 32)
	}
	for i := range d.vals {
		d.vals[i] = randBytes(r, benchValueLen-4+r.IntN(9))
	}
	dataCache[n] = d
	return d
}

func (d *benchData) val(i int) []byte { return d.vals[i&(len(d.vals)-1)] }

// build inserts the first n keys of d into a fresh trie and hashes it.
func build(tb testing.TB, newTrie func() benchTrie, d *benchData) benchTrie {
	tr := newTrie()
	for i, k := range d.keys {
		if err := tr.Put(k, d.val(i)); err != nil {
			tb.Fatal(err)
		}
	}
	tr.Hash()
	return tr
}

// BenchmarkRoot100k: build a trie of 100k fresh random keys and compute its root.
func BenchmarkRoot100k(b *testing.B) {
	d := getBenchData(100_000)
	for _, im := range impls {
		b.Run("impl="+im.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tr := im.new()
				for i, k := range d.keys {
					if err := tr.Put(k, d.val(i)); err != nil {
						b.Fatal(err)
					}
				}
				tr.Hash()
			}
		})
	}
}

// BenchmarkUpdate1kOf1M: in a 1M-key trie, overwrite 1,000 random existing
// keys with new values and recompute the root. The trie is built once per
// implementation and reused across iterations.
func BenchmarkUpdate1kOf1M(b *testing.B) {
	n := 1_000_000
	if testing.Short() {
		n = 100_000
	}
	d := getBenchData(n)
	for _, im := range impls {
		b.Run("impl="+im.name, func(b *testing.B) {
			tr := build(b, im.new, d)
			r := rand.New(rand.NewPCG(1, 2))
			v := 0
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				for range 1000 {
					v++
					if err := tr.Put(d.keys[r.IntN(n)], d.val(v)); err != nil {
						b.Fatal(err)
					}
				}
				tr.Hash()
			}
		})
	}
}

// BenchmarkProve100k: proof of a random present key in a hashed 100k trie.
func BenchmarkProve100k(b *testing.B) {
	d := getBenchData(100_000)
	for _, im := range impls {
		b.Run("impl="+im.name, func(b *testing.B) {
			tr := build(b, im.new, d)
			r := rand.New(rand.NewPCG(3, 4))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := tr.Prove(d.keys[r.IntN(len(d.keys))]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPut: insert fresh random keys (no hashing) into a trie that starts
// with 100k hashed keys; one op is one Put, so -benchmem shows allocs per Put.
func BenchmarkPut(b *testing.B) {
	d := getBenchData(100_000)
	for _, im := range impls {
		b.Run("impl="+im.name, func(b *testing.B) {
			tr := build(b, im.new, d)
			r := rand.New(rand.NewPCG(5, 6))
			keys := make([][]byte, b.N)
			for i := range keys {
				keys[i] = randBytes(r, 32)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if err := tr.Put(keys[i], d.val(i)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
