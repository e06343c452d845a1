package rocks

import (
	"encoding/binary"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hexstate/hexstate/vertex"
	"github.com/linxGnu/grocksdb"
)

// BenchmarkWriteShape measures the cost of persisting one block's vertex batch
// (17,600 records with sorted 8-byte IDs spread over 1..3,000,000, values of
// 60-600 bytes, mean ~195) into a store that already holds ~2.6M records, under
// several RocksDB settings. Every variant opens its own copy (hard-linked SST
// files) of one prefilled, fully compacted base store.
//
// Environment:
//
//	HEXSTATE_WRITESHAPE_RECORDS  prefilled records (default 2,600,000)
//	HEXSTATE_WRITESHAPE_REPS     rounds over all variants (default 2); round r>0
//	                             names its sub-benchmarks "variant#0r"
//	HEXSTATE_WRITESHAPE_BATCH    records per batch (default 17,600; a 64-block
//	                             persist of trie-bench's 1M-account state writes ~700,000)
//
// Run with e.g.
//
//	go test ./rocks -run '^$' -bench WriteShape -benchtime 150x -timeout 60m
//
// Use enough iterations that several flushes happen (a flush of 4 x 16 MiB memtables holds ~18 batches)
// or the flush cost is not in the numbers. Metrics per op (one batch): ns/op is
// build + Write (+ WriteBatch.Clear); build-ms is the PutCF loop, write-ms the
// db.Write call, p50/max-write-ms its distribution, stall-ms RocksDB's
// cumulative write stall, memget-us a point read of a key still in the memtable
// (measured after the loop), cpu-ms the CPU time of the whole process (flush
// and compaction threads and the untimed batch generation, ~2 ms, included).
func BenchmarkWriteShape(b *testing.B) {
	records := envInt(b, "HEXSTATE_WRITESHAPE_RECORDS", 2_600_000)
	reps := envInt(b, "HEXSTATE_WRITESHAPE_REPS", 2)
	batchRecords := envInt(b, "HEXSTATE_WRITESHAPE_BATCH", 17_600)
	base := filepath.Join(b.TempDir(), "base")
	t0 := time.Now()
	prefillWriteShape(b, base, records)
	b.Logf("prefill of %d records + full compaction: %v", records, time.Since(t0).Round(time.Millisecond))

	pool := make([]byte, 32<<20) // values are random slices of this
	prng := rand.New(rand.NewPCG(11, 12))
	for i := 0; i+8 <= len(pool); i += 8 {
		binary.LittleEndian.PutUint64(pool[i:], prng.Uint64())
	}

	for rep := 0; rep < reps; rep++ {
		for _, v := range writeShapeVariants {
			b.Run(v.name, func(b *testing.B) { runWriteShape(b, base, pool, v, batchRecords) })
		}
	}
}

const wsMaxID = 3_000_000

// wsVariant is one configuration: opts changes the store options, wo the write
// options after Open. mode picks how a batch reaches RocksDB.
type wsVariant struct {
	name     string
	opts     func(*Options)
	wo       func(*grocksdb.WriteOptions)
	mode     wsMode
	unsorted bool
}

type wsMode int

const (
	wsSplit wsMode = iota // Store.Write's body replicated here, timed in two parts
	wsStore               // Store.Write itself
)

// tune appends f to o.Tune.
func tune(o *Options, f func(*grocksdb.Options, *grocksdb.BlockBasedTableOptions)) {
	prev := o.Tune
	o.Tune = func(d *grocksdb.Options, t *grocksdb.BlockBasedTableOptions) {
		if prev != nil {
			prev(d, t)
		}
		f(d, t)
	}
}

// writeShapeVariants compare the default (16 MiB memtables, up to 8, merged 4
// per flush: the winner of this benchmark) with the alternatives it was chosen
// over. "default" and "64M-x2" (the earlier default) are the pair to read first.
var writeShapeVariants = []wsVariant{
	{name: "default-StoreWrite", mode: wsStore},
	{name: "default"},
	{name: "64M-x2", opts: func(o *Options) {
		o.WriteBufferBytes = 64 << 20
		tune(o, func(d *grocksdb.Options, _ *grocksdb.BlockBasedTableOptions) {
			d.SetMaxWriteBufferNumber(2)
			d.SetMinWriteBufferNumberToMerge(1)
		})
	}},
	// Small memtables flushed one at a time: more, smaller L0 files.
	{name: "wbuf16M-merge1", opts: func(o *Options) {
		tune(o, func(d *grocksdb.Options, _ *grocksdb.BlockBasedTableOptions) { d.SetMinWriteBufferNumberToMerge(1) })
	}},
	{name: "wbuf8M", opts: func(o *Options) { o.WriteBufferBytes = 8 << 20 }},
	{name: "wbuf32M", opts: func(o *Options) { o.WriteBufferBytes = 32 << 20 }},
	{name: "wbuf256M", opts: func(o *Options) { o.WriteBufferBytes = 256 << 20 }},
	// With 6 memtables 4 merged ones flush slower than 2 fill: writes stall.
	{name: "wbuf16M-max6", opts: func(o *Options) {
		tune(o, func(d *grocksdb.Options, _ *grocksdb.BlockBasedTableOptions) { d.SetMaxWriteBufferNumber(6) })
	}},
	// Without the WAL the two column families must flush atomically, or a crash
	// could leave the admin record of one batch with the vertices of another.
	{name: "noWAL-atomicFlush", wo: func(w *grocksdb.WriteOptions) { w.DisableWAL(true) }, opts: func(o *Options) {
		tune(o, func(d *grocksdb.Options, _ *grocksdb.BlockBasedTableOptions) { d.SetAtomicFlush(true) })
	}},
	{name: "hintPerBatch", wo: func(w *grocksdb.WriteOptions) { w.SetMemtableInsertHintPerBatch(true) }},
	{name: "noConcurrentMemtable", opts: func(o *Options) {
		tune(o, func(d *grocksdb.Options, _ *grocksdb.BlockBasedTableOptions) {
			d.SetAllowConcurrentMemtableWrites(false)
		})
	}},
	{name: "unsorted", unsorted: true},
	{name: "memtableBloom", opts: func(o *Options) {
		tune(o, func(d *grocksdb.Options, _ *grocksdb.BlockBasedTableOptions) {
			d.SetMemTablePrefixBloomSizeRatio(0.1)
			d.SetMemtableWholeKeyFiltering(true)
		})
	}},
	{name: "vectorMemtable", opts: func(o *Options) {
		tune(o, func(d *grocksdb.Options, _ *grocksdb.BlockBasedTableOptions) {
			d.SetAllowConcurrentMemtableWrites(false) // the vector rep cannot insert concurrently
			d.SetMemtableVectorRep()
		})
	}},
	{name: "noCompression", opts: func(o *Options) { o.NoCompression = true }},
}

// prefillWriteShape creates a store in dir holding about n records with IDs in
// 1..wsMaxID, compacts it fully and closes it.
func prefillWriteShape(b *testing.B, dir string, n int) {
	b.Helper()
	s, err := Open(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	p := float64(n) / wsMaxID
	var batch vertex.Batch
	buf := make([]byte, 0, 64<<20)
	flush := func() {
		if err := s.Write(&batch); err != nil {
			b.Fatal(err)
		}
		batch.Puts, buf = batch.Puts[:0], buf[:0]
	}
	for id := vertex.ID(1); id <= wsMaxID; id++ {
		if rng.Float64() >= p {
			continue
		}
		sz := wsValueSize(rng)
		start := len(buf)
		for range sz {
			buf = append(buf, byte(rng.Uint32()))
		}
		batch.Puts = append(batch.Puts, vertex.Record{ID: id, Rec: buf[start:len(buf):len(buf)]})
		if len(batch.Puts) == 200_000 {
			flush()
		}
	}
	batch.Admin = []byte("prefill")
	flush()
	if err := s.Compact(); err != nil {
		b.Fatal(err)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
}

// wsValueSize draws a record size: 82% in 60..220, 18% in 300..600 (mean ~196).
func wsValueSize(rng *rand.Rand) int {
	if rng.UintN(100) < 82 {
		return 60 + int(rng.UintN(161))
	}
	return 300 + int(rng.UintN(301))
}

func runWriteShape(b *testing.B, base string, pool []byte, v wsVariant, batchRecords int) {
	dir := filepath.Join(b.TempDir(), "db")
	if err := cloneStoreDir(base, dir); err != nil {
		b.Fatal(err)
	}
	o := DefaultOptions()
	if v.opts != nil {
		v.opts(&o)
	}
	s, err := Open(dir, &o)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if v.wo != nil {
		v.wo(s.wo)
	}

	syscall.Sync() // write back the previous variant's files before timing
	rng := rand.New(rand.NewPCG(5, 6))
	seen := make([]uint64, wsMaxID/64+1)
	batch := vertex.Batch{Admin: make([]byte, 120), Puts: make([]vertex.Record, batchRecords)}
	var build, write time.Duration
	writes := make([]time.Duration, 0, b.N)
	var bytes int

	cpu0 := wsCPUTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		wsFillBatch(rng, seen, pool, &batch, v.unsorted)
		for _, r := range batch.Puts {
			bytes += len(r.Rec)
		}
		b.StartTimer()
		switch v.mode {
		case wsStore:
			t := time.Now()
			if err := s.Write(&batch); err != nil {
				b.Fatal(err)
			}
			writes = append(writes, time.Since(t))
		case wsSplit:
			bt, wt, err := wsWriteSplit(s, &batch)
			if err != nil {
				b.Fatal(err)
			}
			build += bt
			write += wt
			writes = append(writes, wt)
		}
	}
	b.StopTimer()
	cpu := wsCPUTime() - cpu0

	n := float64(b.N)
	b.ReportMetric(cpu.Seconds()*1e3/n, "cpu-ms")
	b.ReportMetric(n*float64(batchRecords)/b.Elapsed().Seconds(), "records/s")
	if v.mode != wsStore {
		b.ReportMetric(build.Seconds()*1e3/n, "build-ms")
		b.ReportMetric(write.Seconds()*1e3/n, "write-ms")
	}
	slices.Sort(writes)
	b.ReportMetric(writes[len(writes)/2].Seconds()*1e3, "p50-write-ms")
	b.ReportMetric(writes[len(writes)-1].Seconds()*1e3, "max-write-ms")
	b.ReportMetric(float64(bytes)/(n*float64(batchRecords)), "B/rec")
	b.ReportMetric(wsStallSeconds(s.db.GetProperty("rocksdb.dbstats"))*1e3/n, "stall-ms")

	// Check the last batch landed, and time point reads of it (memtable hits,
	// unless a flush just happened).
	const gets = 20
	t := time.Now()
	for j := 0; j < gets; j++ {
		r := batch.Puts[(j*7919)%len(batch.Puts)]
		got, err := s.Vertex(r.ID)
		if err != nil {
			b.Fatal(err)
		}
		if string(got) != string(r.Rec) {
			b.Fatalf("Vertex(%d) = %d bytes, want the %d written", r.ID, len(got), len(r.Rec))
		}
	}
	b.ReportMetric(float64(time.Since(t).Microseconds())/gets, "memget-us")
	if a, err := s.Admin(); err != nil || string(a) != string(batch.Admin) {
		b.Fatalf("Admin = %q, %v", a, err)
	}
}

// wsFillBatch replaces batch.Puts with len(batch.Puts) distinct random IDs in
// 1..wsMaxID (ascending unless unsorted) and values sliced from pool.
func wsFillBatch(rng *rand.Rand, seen []uint64, pool []byte, batch *vertex.Batch, unsorted bool) {
	n := len(batch.Puts)
	puts := batch.Puts[:0]
	for len(puts) < n {
		id := 1 + rng.Uint64N(wsMaxID)
		if seen[id/64]&(1<<(id%64)) != 0 {
			continue
		}
		seen[id/64] |= 1 << (id % 64)
		sz := wsValueSize(rng)
		off := rng.IntN(len(pool) - sz)
		puts = append(puts, vertex.Record{ID: vertex.ID(id), Rec: pool[off : off+sz : off+sz]})
	}
	for _, r := range puts {
		seen[r.ID/64] = 0
	}
	if !unsorted {
		slices.SortFunc(puts, func(a, b vertex.Record) int { return int(a.ID) - int(b.ID) })
	}
	batch.Puts = puts
	binary.BigEndian.PutUint64(batch.Admin, rng.Uint64())
}

// wsWriteSplit is Store.Write's body with the batch building (the Go
// representation and its copy into a native WriteBatch) and the db.Write call
// timed separately.
func wsWriteSplit(s *Store, b *vertex.Batch) (build, write time.Duration, err error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	t0 := time.Now()
	s.fill(b)
	wb := grocksdb.WriteBatchFrom(s.rep.bytes())
	defer wb.Destroy()
	t1 := time.Now()
	err = s.db.Write(s.wo, wb)
	return t1.Sub(t0), time.Since(t1), err
}

// wsCPUTime is the user+system CPU time of the process so far (all threads,
// RocksDB's flush and compaction threads included).
func wsCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// wsStallSeconds reads "Cumulative stall: HH:MM:SS.mmm H:M:S" from the
// rocksdb.dbstats property (0 when absent).
func wsStallSeconds(dbstats string) float64 {
	const tag = "Cumulative stall: "
	i := strings.Index(dbstats, tag)
	if i < 0 {
		return 0
	}
	f := strings.Fields(dbstats[i+len(tag):])
	if len(f) == 0 {
		return 0
	}
	parts := strings.Split(f[0], ":")
	if len(parts) != 3 {
		return 0
	}
	h, _ := strconv.ParseFloat(parts[0], 64)
	m, _ := strconv.ParseFloat(parts[1], 64)
	sec, _ := strconv.ParseFloat(parts[2], 64)
	return h*3600 + m*60 + sec
}

// cloneStoreDir copies a closed store: SST files are hard-linked (RocksDB
// never changes them), everything else but the reserve file is copied.
func cloneStoreDir(src, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || e.Name() == "HEXSTATE-RESERVE" { // the reserve file is not data
			continue
		}
		from, to := filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())
		if strings.HasSuffix(e.Name(), ".sst") {
			if err := os.Link(from, to); err == nil {
				continue
			}
		}
		if err := copyFile(from, to); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}
