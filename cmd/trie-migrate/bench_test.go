package main

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hexstate/hexstate/internal/trietest"
	"github.com/hexstate/hexstate/rocks"
	"github.com/hexstate/hexstate/vertex"
)

// TestMigrateBench measures migrations of large states (docs/benchmarks.md,
// "Migration"). It runs only when HEXSTATE_MIGRATE_BENCH gives the number of
// accounts of the sorted-built state (e.g. 1000000); HEXSTATE_MIGRATE_GROWN
// gives that of the state grown by random-order inserts (default a third).
// HEXSTATE_MIGRATE_DIR, when set, is where the stores go (default a temporary
// directory); the sources built there are kept (marked by a file
// built-N-GROWN) and reused by the next run. HEXSTATE_MIGRATE_ONLY, a regular
// expression, selects the migrations by name. HEXSTATE_MIGRATE_SOURCE, when
// set, names an existing store to migrate instead (to HEXSTATE_MIGRATE_TO,
// default v1, into the store's directory suffixed .to-v1 or .to-v2), such
// as the scale workload's largest state. HEXSTATE_MIGRATE_PROFILE=P
// makes each migration write a CPU profile to P.<its index>. Each migration
// runs trie-migrate in a child process, so that its peak RSS is its own; the
// baseline (a raw sequential scan of the source, alone and written to a fresh
// store in 65,536-record batches) runs in this process. Wall and CPU time
// are compared with the baseline's.
//
//	HEXSTATE_MIGRATE_BENCH=1000000 go test ./cmd/trie-migrate -run TestMigrateBench -v -timeout 1h
func TestMigrateBench(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("HEXSTATE_MIGRATE_BENCH"))
	given := os.Getenv("HEXSTATE_MIGRATE_SOURCE")
	if n <= 0 && given == "" {
		t.Skip("set HEXSTATE_MIGRATE_BENCH to the number of accounts, or HEXSTATE_MIGRATE_SOURCE to a store")
	}
	type migration struct{ name, src, dst, to string }
	var runs []migration
	if given != "" {
		to := os.Getenv("HEXSTATE_MIGRATE_TO")
		if to == "" {
			to = "v1"
		}
		runs = []migration{{"given → " + to, given, given + ".to-" + to, to}}
	} else {
		grown, _ := strconv.Atoi(os.Getenv("HEXSTATE_MIGRATE_GROWN"))
		if grown <= 0 {
			grown = n / 3
		}
		d := os.Getenv("HEXSTATE_MIGRATE_DIR")
		if d == "" {
			d = t.TempDir()
		}
		buildSources(t, d, n, grown)
		runs = []migration{
			{"sorted v1 → v2", d + "/sorted", d + "/sorted.v2", "v2"},
			{"v2 → v1", d + "/sorted.v2", d + "/sorted.v2.v1", "v1"},
			{"grown v1 → v2", d + "/grown", d + "/grown.v2", "v2"},
		}
	}
	fmt.Printf("| migration | vertices | copy | copy vertices/s | verify | peak RSS | written | scan + write (scan alone) | copy / (scan + write), wall | … CPU | load |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	only := regexp.MustCompile(os.Getenv("HEXSTATE_MIGRATE_ONLY"))
	for i, r := range runs {
		if !only.MatchString(r.name) {
			continue
		}
		for _, dir := range []string{r.dst, r.dst + ".scan"} {
			trietest.Must(t, os.RemoveAll(dir), "removing %s", dir)
		}
		cmd := command("-to", r.to, r.src, r.dst)
		if p := os.Getenv("HEXSTATE_MIGRATE_PROFILE"); p != "" {
			cmd.Env = append(cmd.Env, fmt.Sprintf("%s=%s.%d", envCPUProfile, p, i))
		}
		load := loadAverage()
		t0 := time.Now()
		out, err := cmd.CombinedOutput()
		wall := time.Since(t0)
		if err != nil {
			t.Fatalf("%s: %v\n%s", r.name, err, out)
		}
		m := regexp.MustCompile(`copied (\d+) vertices \(([\d.]+) MiB written by this run\) in (\S+) \((\S+) of CPU\): (\d+) vertices/s; verified in (\S+)`).FindSubmatch(out)
		if m == nil {
			t.Fatalf("%s: unexpected output\n%s", r.name, out)
		}
		copyTime, _ := time.ParseDuration(string(m[3]))
		copyCPU, _ := time.ParseDuration(string(m[4]))
		rss := 0
		if m := regexp.MustCompile(`peak RSS (\d+) KiB`).FindSubmatch(out); m != nil {
			rss, _ = strconv.Atoi(string(m[1]))
		}
		scan, base, baseCPU, baseRecs := baseline(t, r.src, r.dst+".scan")
		if strconv.Itoa(baseRecs) != string(m[1]) {
			t.Errorf("%s: the scan read %d records, the copy wrote %s", r.name, baseRecs, m[1])
		}
		fmt.Printf("| %s | %s | %v (%v CPU) | %s | %s | %d MiB | %s MiB | %v, %v CPU (%v) | %.2f× | %.2f× | %s → %s |\n",
			r.name, m[1], copyTime, copyCPU, m[5], m[6], rss>>10, m[2], base.Round(time.Millisecond), baseCPU.Round(time.Millisecond),
			scan.Round(time.Millisecond), copyTime.Seconds()/base.Seconds(), copyCPU.Seconds()/baseCPU.Seconds(), load, loadAverage())
		t.Logf("%s: whole run %v; %s", r.name, wall.Round(time.Millisecond), regexp.MustCompile(`leaf index: [^\n]*`).Find(out))
	}
}

// buildSources builds the benchmark's sources in d unless a run before
// left them there (marked by d/built): the sorted v1 state of n accounts and
// the v1 state grown by inserting grown accounts in random order.
func buildSources(t *testing.T, d string, n, grown int) {
	t.Helper()
	mark := fmt.Sprintf("%s/built-%d-%d", d, n, grown)
	if _, err := os.Stat(mark); err == nil {
		t.Logf("reusing the sources in %s", d)
		return
	}
	for _, dir := range []string{"sorted", "grown"} {
		trietest.Must(t, os.RemoveAll(d+"/"+dir), "removing %s", dir)
	}
	start := time.Now()
	makeStore(t, d+"/sorted", vertex.FormatV1, trietest.StateAccounts(n, 7))
	t.Logf("built the sorted v1 source (%d accounts) in %v", n, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	growStore(t, d+"/grown", trietest.StateAccounts(grown, 8), 20_000, 9)
	t.Logf("grew the v1 source (%d accounts, persisting every 20,000) in %v", grown, time.Since(start).Round(time.Millisecond))
	trietest.Must(t, os.WriteFile(mark, nil, 0o644), "marking the sources built")
}

// loadAverage is the one-minute load average, for the record.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

// baseline scans every record of the store in src ([1, top] by VertexRange),
// once alone and once writing them to a fresh store in dst in 65,536-record
// batches, with trie-migrate's target options (synced writes) and as a
// copy's batches are written (vertex.Batch.Load: ingested); it returns
// the time of each, the CPU time of the scan and write (this process's, all
// threads) and the number of records.
func baseline(t *testing.T, src, dst string) (scan, scanWrite, cpu time.Duration, records int) {
	t.Helper()
	in, err := rocks.Open(src, &rocks.Options{ReadOnly: true, BlockCacheBytes: 128 << 20})
	trietest.Must(t, err, "open %s", src)
	defer in.Close()
	out, err := rocks.Open(dst, &rocks.Options{Sync: true, BlockCacheBytes: 32 << 20})
	trietest.Must(t, err, "open %s", dst)
	defer out.Close()
	start := time.Now()
	trietest.Must(t, in.VertexRange(vertex.RootID, 1<<62, func(vertex.ID, []byte) error { return nil }), "VertexRange")
	scan = time.Since(start)
	start, cpu0 := time.Now(), cpuTime()
	var buf []byte
	b := vertex.Batch{Load: true}
	n := 0
	flush := func() {
		trietest.Must(t, out.Write(&b), "Write")
		b.Puts, buf = b.Puts[:0], buf[:0]
	}
	err = in.VertexRange(vertex.RootID, 1<<62, func(id vertex.ID, rec []byte) error {
		s := len(buf)
		buf = append(buf, rec...)
		b.Puts = append(b.Puts, vertex.Record{ID: id, Rec: buf[s:len(buf):len(buf)]})
		n++
		if len(b.Puts) == 1<<16 {
			flush()
		}
		return nil
	})
	trietest.Must(t, err, "VertexRange")
	flush()
	return scan, time.Since(start), cpuTime() - cpu0, n
}
