package main

import (
	"context"
	"encoding/binary"
	"math/rand"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hexstate/hexstate/rocks"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// TestMeasureCheck measures the check against the build of the same state
// (docs/benchmarks.md, "Consistency check"): it streams a state of
// HEXSTATE_CHECK_ACCOUNTS accounts (default 1M; every 10th with 1..8 slots)
// into a RocksDB store with a StateLoader, timing the load, then times
// DB.Check on two workers on the same open database, and trie-check on the
// closed store (a cold open). It runs only with HEXSTATE_CHECK_MEASURE=1.
func TestMeasureCheck(t *testing.T) {
	if os.Getenv("HEXSTATE_CHECK_MEASURE") == "" {
		t.Skip("set HEXSTATE_CHECK_MEASURE=1 to measure the check of a 1M-account store")
	}
	n := 1_000_000
	if s := os.Getenv("HEXSTATE_CHECK_ACCOUNTS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			t.Fatal(err)
		}
	}
	f := vertex.Latest
	if os.Getenv("HEXSTATE_CHECK_FORMAT") == "v1" {
		f = vertex.FormatV1
	}
	dir := t.TempDir()
	st, err := rocks.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	db, err := trie.Open(st, &trie.Options{Format: f})
	if err != nil {
		t.Fatal(err)
	}

	start, cpu0 := time.Now(), cpuTime(t)
	l, err := db.NewStateLoader()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(1))
	var accounts, slots int
	for i := 0; i < n; i += 10_000 {
		chunk := measureAccounts(rng, i, min(n, i+10_000), n)
		for _, a := range chunk {
			slots += len(a.Storage)
		}
		accounts += len(chunk)
		if err := l.Add(chunk); err != nil {
			t.Fatal(err)
		}
	}
	root, err := l.Commit(1)
	if err != nil {
		t.Fatal(err)
	}
	build, buildCPU := time.Since(start), cpuTime(t)-cpu0
	t.Logf("%v: streamed build of %d accounts, %d slots: %v, CPU %v (root %v)", f, accounts, slots, build.Round(time.Millisecond), buildCPU.Round(time.Millisecond), root)

	var peak atomic.Uint64
	sample := func(trie.CheckCounts) {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		if m.HeapInuse > peak.Load() {
			peak.Store(m.HeapInuse)
		}
	}
	reads, cpu0 := db.BackendStats(), cpuTime(t)
	rep, err := db.Check(context.Background(), &trie.CheckOptions{Workers: 2, Progress: sample, ProgressEvery: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	after, checkCPU := db.BackendStats(), cpuTime(t)-cpu0
	t.Logf("backend reads of the check: %d point, %d range, %d records", after.PointReads-reads.PointReads, after.RangeReads-reads.RangeReads, after.Records-reads.Records)
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("DB.Check, same open database, 2 workers: %v = %.2f× the build, CPU %v = %.2f× the build's; %d vertices, %d accounts, %d slots, %.0f MiB read; heap in use ≤ %d MiB (sampled each second, the loader's cache included)",
		rep.Elapsed.Round(time.Millisecond), rep.Elapsed.Seconds()/build.Seconds(), checkCPU.Round(time.Millisecond), checkCPU.Seconds()/buildCPU.Seconds(), rep.Counts.Vertices, rep.Counts.Accounts, rep.Counts.Slots, float64(rep.Counts.Bytes)/(1<<20), peak.Load()>>20)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	runtime.GC()
	peak.Store(0)
	start, cpu0 = time.Now(), cpuTime(t)
	code := run(context.Background(), []string{"-workers", "2", "-progress", "10s", dir}, testWriter{t}, testWriter{t})
	cmd, cmdCPU := time.Since(start), cpuTime(t)-cpu0
	if code != exitOK {
		t.Fatalf("trie-check exit %d", code)
	}
	t.Logf("trie-check on the closed store (open, check): %v = %.2f× the build, CPU %v = %.2f× the build's", cmd.Round(time.Millisecond), cmd.Seconds()/build.Seconds(), cmdCPU.Round(time.Millisecond), cmdCPU.Seconds()/buildCPU.Seconds())
}

// cpuTime returns the CPU time (user + system) the process has used so far,
// RocksDB's threads included: on a shared machine it varies less with the
// other jobs than wall time does.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// measureAccounts returns accounts lo..hi-1 of a state of n, in increasing
// key order without sorting: account i's key starts with its share of the
// 64-bit key space. Every 10th account has 1..8 slots.
func measureAccounts(rng *rand.Rand, lo, hi, n int) []trie.AccountLeaf {
	step := ^uint64(0) / uint64(n)
	out := make([]trie.AccountLeaf, hi-lo)
	for i := range out {
		a := &out[i]
		rng.Read(a.AddrHash[8:])
		binary.BigEndian.PutUint64(a.AddrHash[:8], uint64(lo+i)*step+rng.Uint64()%step)
		a.Account.Nonce = uint64(rng.Intn(5))
		a.Account.Balance.SetUint64(rng.Uint64())
		if (lo+i)%10 == 0 {
			k := 1 + rng.Intn(8)
			a.Storage = make([]trie.SlotLeaf, k)
			sstep := ^uint64(0) / uint64(k)
			for j := range a.Storage {
				s := &a.Storage[j]
				rng.Read(s.Hash[8:])
				binary.BigEndian.PutUint64(s.Hash[:8], uint64(j)*sstep+rng.Uint64()%sstep)
				s.Value.SetUint64(1 + uint64(rng.Intn(1000)))
			}
		}
	}
	return out
}

// testWriter sends the command's output to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
