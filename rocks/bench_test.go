package rocks

import (
	"math/rand/v2"
	"testing"

	"github.com/hexstate/hexstate/vertex"
)

const benchBranches = 4096 // 16 children each: 65536 records

// benchStore is a compacted store of benchBranches v2-style sibling groups with
// 100-byte random records, reopened so the block cache is cold.
func benchStore(b *testing.B) *Store {
	b.Helper()
	dir := b.TempDir()
	o := testOptions()
	o.BlockCacheBytes = 64 << 20
	o.Statistics = true
	s, err := Open(dir, o)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	var batch vertex.Batch
	for id := vertex.ID(16); id < 16+benchBranches*16; id++ {
		rec := make([]byte, 100)
		for i := range rec {
			rec[i] = byte(rng.UintN(256))
		}
		batch.Puts = append(batch.Puts, vertex.Record{ID: id, Rec: rec})
	}
	if err := s.Write(&batch); err != nil {
		b.Fatal(err)
	}
	if err := s.Compact(); err != nil {
		b.Fatal(err)
	}
	s.Close()
	s, err = Open(dir, o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

func reportBlocks(b *testing.B, s *Store, before BlockStats) {
	after, err := s.BlockStats()
	if err != nil {
		b.Fatal(err)
	}
	d := after.Sub(before)
	b.ReportMetric(float64(d.DataBlockReads+d.DataBlockHits)/float64(b.N), "blocks/op")
}

func BenchmarkVertex(b *testing.B) {
	s := benchStore(b)
	before, _ := s.BlockStats()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Vertex(vertex.ID(16 + (i*7919)%(benchBranches*16))); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportBlocks(b, s, before)
}

// BenchmarkVertexRange16 reads one 16-slot sibling group per op, with the
// pooled iterators re-seeked (pooled) and with a new iterator per read (fresh:
// the pool is invalidated before each read, as a Write does).
func BenchmarkVertexRange16(b *testing.B) {
	for _, fresh := range []bool{false, true} {
		name := "pooled"
		if fresh {
			name = "fresh"
		}
		b.Run(name, func(b *testing.B) {
			s := benchStore(b)
			before, _ := s.BlockStats()
			fn := func(vertex.ID, []byte) error { return nil }
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if fresh {
					s.ranges.invalidate()
				}
				base := vertex.ID(16 + 16*((i*7919)%benchBranches))
				if err := s.VertexRange(base, 16, fn); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			reportBlocks(b, s, before)
		})
	}
}

// BenchmarkMultiGet16 is the alternative to VertexRange's iterator: one sorted
// MultiGet of the 16 keys.
func BenchmarkMultiGet16(b *testing.B) {
	s := benchStore(b)
	before, _ := s.BlockStats()
	keys := make([][]byte, 16)
	for i := range keys {
		keys[i] = make([]byte, 8)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		base := vertex.ID(16 + 16*((i*7919)%benchBranches))
		for j := range keys {
			putKey(keys[j], base+vertex.ID(j))
		}
		vals, err := s.db.MultiGetCF(s.ro, s.cfVertex, keys...)
		if err != nil {
			b.Fatal(err)
		}
		vals.Destroy()
	}
	b.StopTimer()
	reportBlocks(b, s, before)
}

func BenchmarkWrite1000(b *testing.B) {
	s := mustOpenB(b)
	batch := vertex.Batch{Admin: []byte("admin")}
	for j := 0; j < 1000; j++ {
		batch.Puts = append(batch.Puts, vertex.Record{Rec: make([]byte, 100)})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range batch.Puts {
			batch.Puts[j].ID = vertex.ID(16 + i*1000 + j)
		}
		if err := s.Write(&batch); err != nil {
			b.Fatal(err)
		}
	}
}

func mustOpenB(b *testing.B) *Store {
	s, err := Open(b.TempDir(), testOptions())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}
