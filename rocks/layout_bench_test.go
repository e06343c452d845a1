package rocks_test

import (
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/hexstate/hexstate/internal/trietest"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/rocks"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// BenchmarkLayout compares the on-disk layouts v1 (each child its own ID) and v2
// (a branch's 16 children at consecutive IDs) on RocksDB with caches much
// smaller than the data, the case the v2 layout is for.
//
// Setup (not timed): per format, a store of N random 32-byte keys with 80-byte
// values is built, compacted and closed. trietest.Each op then reopens it cold (new 8 MiB
// block cache, new 8 MiB vertex cache, RocksDB statistics on), updates U random
// existing keys in one frame and computes the root; the frame is rolled back, so
// every op sees the same data. Reported per op:
//
//	data-blocks/op  data blocks RocksDB read from SST files (block cache misses)
//	point-reads/op  backend Vertex calls
//	range-reads/op  backend VertexRange calls (v2 branch children)
//	records/op      records the backend returned
//	file-MiB/op     bytes of SST file reads (any block kind)
//
// N and U come from HEXSTATE_LAYOUT_KEYS (default 200000; the docs' figure uses
// 1000000, whose setup takes a few minutes on 2 cores) and
// HEXSTATE_LAYOUT_UPDATES (default 10000):
//
//	go test -run '^$' -bench BenchmarkLayout -benchtime 3x ./trie/
//	HEXSTATE_LAYOUT_KEYS=1000000 go test -run '^$' -bench BenchmarkLayout -benchtime 3x -timeout 60m ./trie/
func BenchmarkLayout(b *testing.B) {
	n := layEnv(b, "HEXSTATE_LAYOUT_KEYS", 200_000)
	updates := layEnv(b, "HEXSTATE_LAYOUT_UPDATES", 10_000)
	const cache = 8 << 20
	dir := b.TempDir()
	for _, l := range layouts {
		start := time.Now()
		size := layBuild(b, filepath.Join(dir, l.name), l.f, l.noChild, n)
		b.Logf("%s: built %d keys in %v (%.0f MiB of SST files)", l.name, n, time.Since(start).Round(time.Millisecond), float64(size)/(1<<20))
	}
	// The same updates for both formats and every op.
	r := rand.New(rand.NewPCG(2024, 1))
	idx := make([]int, updates)
	for i := range idx {
		idx[i] = r.IntN(n)
	}
	roots := map[string]hashkey.Hash{}
	for _, l := range layouts {
		f := l.f
		b.Run("layout="+l.name, func(b *testing.B) {
			var blocks rocks.BlockStats
			var reads vertex.ReadStats
			val := make([]byte, 80)
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				st, err := rocks.Open(filepath.Join(dir, l.name), &rocks.Options{
					BlockCacheBytes: cache, Statistics: true, BackgroundJobs: 2})
				trietest.Must(b, err, "rocks.Open")
				db, err := trie.Open(st, &trie.Options{Format: f, CacheBytes: cache, Records: trietest.RecordsOf(l.noChild)})
				trietest.Must(b, err, "trie.Open")
				bs0, err := st.BlockStats()
				trietest.Must(b, err, "BlockStats")
				rs0 := db.BackendStats()
				b.StartTimer()

				fr := db.Begin()
				for j, k := range idx {
					binary.BigEndian.PutUint64(val, uint64(j+1))
					trietest.Must(b, trietest.G(fr).Put(layKey(k), val), "Put")
				}
				root, err := trietest.G(fr).Hash()
				trietest.Must(b, err, "Hash")

				b.StopTimer()
				bs1, err := st.BlockStats()
				trietest.Must(b, err, "BlockStats")
				d := bs1.Sub(bs0)
				blocks.DataBlockReads += d.DataBlockReads
				blocks.FileReadBytes += d.FileReadBytes
				rs := trietest.StatsDiff(db.BackendStats(), rs0)
				reads.PointReads += rs.PointReads
				reads.RangeReads += rs.RangeReads
				reads.BatchReads += rs.BatchReads
				reads.BatchKeys += rs.BatchKeys
				reads.Records += rs.Records
				for name, old := range roots {
					if old != root {
						b.Fatalf("root %v, %s gave %v", root, name, old)
					}
				}
				roots[l.name] = root
				fr.Rollback()
				trietest.Must(b, db.Close(), "Close")
				b.StartTimer()
			}
			per := func(x uint64) float64 { return float64(x) / float64(b.N) }
			b.ReportMetric(per(blocks.DataBlockReads), "data-blocks/op")
			b.ReportMetric(per(reads.PointReads), "point-reads/op")
			b.ReportMetric(per(reads.RangeReads), "range-reads/op")
			b.ReportMetric(per(reads.BatchReads), "batch-reads/op")
			b.ReportMetric(per(reads.BatchKeys), "batch-keys/op")
			b.ReportMetric(per(reads.Records), "records/op")
			b.ReportMetric(per(blocks.FileReadBytes)/(1<<20), "file-MiB/op")
		})
	}
}

// layouts are the stores BenchmarkLayout compares: the two formats with records
// that hold only a branch's own key (the layout alone decides how siblings are
// read), and v2 with children's keys in branch records (the default).
var layouts = []struct {
	name    string
	f       vertex.Format
	noChild bool
}{
	{"v1", vertex.FormatV1, true},
	{"v2", vertex.FormatV2, true},
	{"v2+childkeys", vertex.FormatV2, false},
}

func layEnv(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil || v <= 0 {
		b.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return v
}

// layKey is benchmark key i: 32 pseudo-random bytes.
func layKey(i int) []byte {
	var b [9]byte
	b[0] = 'L'
	binary.BigEndian.PutUint64(b[1:], uint64(i))
	h := hashkey.Keccak256(b[:])
	return h[:]
}

// layBuild creates a store of format f in dir with keys [0, n) and 80-byte
// random values, persisted in blocks of 100,000 keys, compacts and closes it,
// and returns the size of its SST files.
func layBuild(b *testing.B, dir string, f vertex.Format, noChild bool, n int) int64 {
	st, err := rocks.Open(dir, &rocks.Options{BackgroundJobs: 2})
	trietest.Must(b, err, "rocks.Open")
	db, err := trie.Open(st, &trie.Options{Format: f, Records: trietest.RecordsOf(noChild)})
	trietest.Must(b, err, "trie.Open")
	r := rand.New(rand.NewPCG(uint64(n), 80))
	val := make([]byte, 80)
	for start, block := 0, uint64(1); start < n; start, block = start+100_000, block+1 {
		fr := db.Begin()
		for i := start; i < min(n, start+100_000); i++ {
			for j := 0; j < len(val); j += 8 {
				binary.LittleEndian.PutUint64(val[j:], r.Uint64())
			}
			trietest.Must(b, trietest.G(fr).Put(layKey(i), val), "Put")
		}
		trietest.Must(b, db.Persist(fr, block), "Persist(%d)", block)
	}
	trietest.Must(b, st.Compact(), "Compact")
	trietest.Must(b, db.Close(), "Close")
	var size int64
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && filepath.Ext(e.Name()) == ".sst" {
			size += fi.Size()
		}
	}
	if size == 0 {
		b.Fatalf("no SST files in %s", dir)
	}
	return size
}
