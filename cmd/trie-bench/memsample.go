package main

import (
	"fmt"
	"io"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"

	"github.com/hexstate/hexstate/rocks"
	"github.com/hexstate/hexstate/trie"
)

// memSplit is where the process's resident memory was at one moment: the Go
// runtime's (heap and the rest it maps, less what it returned), hexstate's
// memory outside the Go heap (trie.OffHeapBytes: the vertex cache's ring and
// index, the sealed frames' records, the chain index, the writer's batch),
// RocksDB's by its own accounting, and the rest (glibc's free lists, thread
// stacks, code): RSS minus the three.
type memSplit struct {
	rss, goRuntime, offHeap uint64
	rocks                   rocks.MemoryUsage
}

// sampleMemSplit samples the split every 100 ms until stop is called, and
// stop returns the sample of the largest RSS: what the peak was made of.
// store may be nil (a go-ethereum side).
func sampleMemSplit(store *rocks.Store) (stop func() memSplit) {
	samples := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	var peak memSplit
	read := func() {
		s := memSplit{rss: currentRSS(), offHeap: uint64(trie.OffHeapBytes())}
		if s.rss <= peak.rss {
			return
		}
		metrics.Read(samples)
		s.goRuntime = samples[0].Value.Uint64() - samples[1].Value.Uint64()
		if store != nil {
			s.rocks, _ = store.MemoryUsage()
		}
		peak = s
	}
	stopSampling := sampleEvery(100*time.Millisecond, read)
	return func() memSplit {
		stopSampling()
		return peak
	}
}

// print writes the split as one line.
func (s memSplit) print(out io.Writer, name string) {
	other := int64(s.rss) - int64(s.goRuntime+s.offHeap+s.rocks.Total())
	fmt.Fprintf(out, "[%s] at the largest RSS sampled, %s: Go runtime %s, hexstate off the heap %s, RocksDB %s (block cache %s, memtables %s, table readers %s), other %.1fMiB\n",
		name, fmtBytes(s.rss), fmtBytes(s.goRuntime), fmtBytes(s.offHeap), fmtBytes(s.rocks.Total()),
		fmtBytes(s.rocks.BlockCache), fmtBytes(s.rocks.Memtables), fmtBytes(s.rocks.TableReaders), float64(other)/(1<<20))
}

// currentRSS returns VmRSS from /proc/self/statm (0 where there is none).
func currentRSS() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseUint(f[1], 10, 64)
	return pages * uint64(os.Getpagesize())
}
