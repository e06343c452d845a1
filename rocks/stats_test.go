package rocks

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/hexstate/hexstate/vertex"
)

func TestParseStatistics(t *testing.T) {
	text := "rocksdb.block.cache.miss COUNT : 12\n" +
		"rocksdb.block.cache.data.miss COUNT : 7\n" +
		"rocksdb.db.get.micros P50 : 1.500000 P95 : 3.000000 P99 : 4.000000 P100 : 9.000000 COUNT : 40 SUM : 120\n" +
		"garbage line\n\n"
	m := parseStatistics(text)
	want := map[string]uint64{
		"rocksdb.block.cache.miss":      12,
		"rocksdb.block.cache.data.miss": 7,
		"rocksdb.db.get.micros.count":   40,
		"rocksdb.db.get.micros.sum":     120,
	}
	if len(m) != len(want) {
		t.Fatalf("parsed %v, want %v", m, want)
	}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %d, want %d", k, m[k], v)
		}
	}
}

func TestBlockStatsDisabled(t *testing.T) {
	s := mustOpen(t, t.TempDir(), nil)
	if _, err := s.BlockStats(); !errors.Is(err, ErrStatisticsDisabled) {
		t.Fatalf("BlockStats without statistics: %v", err)
	}
}

// TestBlockStatsColdReopen shows the benchmark recipe: write, Compact, reopen
// cold, and count the data blocks a workload reads.
func TestBlockStatsColdReopen(t *testing.T) {
	dir := t.TempDir()
	o := testOptions()
	o.Statistics = true
	s := mustOpen(t, dir, o)
	rng := rand.New(rand.NewPCG(1, 2))
	var b vertex.Batch
	for id := vertex.ID(2); id < 4002; id++ {
		rec := make([]byte, 100)
		for i := range rec {
			rec[i] = byte(rng.UintN(256))
		}
		b.Puts = append(b.Puts, vertex.Record{ID: id, Rec: rec})
	}
	mustWrite(t, s, &b)
	if err := s.Compact(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = mustOpen(t, dir, o) // cold: empty block cache
	before, err := s.BlockStats()
	if err != nil {
		t.Fatal(err)
	}
	read := func() int {
		n := 0
		if err := s.VertexRange(1024, 16, func(vertex.ID, []byte) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := read(); n != 16 {
		t.Fatalf("read %d records", n)
	}
	cold, err := s.BlockStats()
	if err != nil {
		t.Fatal(err)
	}
	d := cold.Sub(before)
	t.Logf("cold range of 16: %+v", d)
	// 16 records of ~110 bytes span one or two 4 KiB blocks.
	if d.DataBlockReads < 1 || d.DataBlockReads > 2 || d.DataBlockBytes == 0 || d.FileReads == 0 || d.FileReadBytes == 0 {
		t.Fatalf("cold range read: %+v", d)
	}
	read() // the pooled iterator still holds the block: no file read
	warm, _ := s.BlockStats()
	if w := warm.Sub(cold); w.DataBlockReads != 0 || w.FileReads != 0 {
		t.Fatalf("warm range read: %+v", w)
	}
	s.ranges.invalidate() // a new iterator finds the block in the block cache
	read()
	fresh, _ := s.BlockStats()
	if w := fresh.Sub(warm); w.DataBlockReads != 0 || w.DataBlockHits == 0 || w.FileReads != 0 {
		t.Fatalf("warm range read with a new iterator: %+v", w)
	}
	if v, err := s.Property("rocksdb.estimate-num-keys"); err != nil || v == "" {
		t.Fatalf("Property = %q, %v", v, err)
	}
}
