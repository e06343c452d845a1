package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie"
)

// side is one implementation running the workload. Each method is one timed
// phase (so that a CPU profile, filtered by its phase label, explains it).
type side interface {
	Name() string
	BuildLoad() error                 // insert the initial state
	BuildRoot() (hashkey.Hash, error) // its root
	BuildPersist() error              // write it to disk
	Apply(b *wlBlock) error           // apply a block's updates
	Root() (hashkey.Hash, error)      // the block's state root
	Persist(block uint64, commit bool) error
	StatsStart()       // start counting read stats (after the build)
	StatsLine() string // read stats since StatsStart
	Close() error
}

// phaseTimes are one phase's per-block durations.
type phaseTimes []time.Duration

func (p phaseTimes) mean() time.Duration {
	if len(p) == 0 {
		return 0
	}
	var s time.Duration
	for _, d := range p {
		s += d
	}
	return s / time.Duration(len(p))
}

// pct returns the q-quantile (nearest rank).
func (p phaseTimes) pct(q float64) time.Duration {
	if len(p) == 0 {
		return 0
	}
	s := slices.Clone(p)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}

type allocStats struct{ mallocs, bytes uint64 }

func memDelta(a, b *runtime.MemStats) allocStats {
	return allocStats{b.Mallocs - a.Mallocs, b.TotalAlloc - a.TotalAlloc}
}

type sideResult struct {
	name                            string
	buildLoad, buildRoot, buildPers time.Duration
	buildAlloc                      allocStats
	buildPeak                       uint64 // the largest live heap seen during the build
	apply, root, persist, total     phaseTimes
	blockAlloc                      allocStats
	blockPeakRSS                    uint64 // VmHWM over the blocks (0 where the system has none)
	stats                           string
}

func (r *sideResult) build() time.Duration { return r.buildLoad + r.buildRoot + r.buildPers }

func timed(name, phase string, fn func() error) (time.Duration, error) {
	var err error
	start := time.Now()
	pprof.Do(context.Background(), pprof.Labels("impl", name, "phase", phase), func(context.Context) { err = fn() })
	return time.Since(start), err
}

func runBlocks(f *benchFlags, w *workload, out io.Writer) error {
	dir := f.dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "trie-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	roots := make([]hashkey.Hash, len(w.blocks)+1) // [0]: the built state
	refName := ""
	var results []*sideResult
	for _, name := range f.impls {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return fmt.Errorf("%s already exists: pass an empty or new -dir", filepath.Join(dir, name))
		}
		var s side
		var err error
		if name == "geth" {
			s, err = newGethSide(dir, f.cacheMB, w)
		} else {
			s, err = newHexSide(name, formatOf(name), dir, f.cacheMB, f.build == "stream", w)
		}
		if err != nil {
			return fmt.Errorf("%s: open: %w", name, err)
		}
		res, err := runSide(s, f, w, roots, refName, out)
		if cerr := s.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("%s: close: %w", name, cerr)
		}
		if err != nil {
			return err
		}
		if refName == "" {
			refName = name
		}
		results = append(results, res)
		if f.dir == "" {
			os.RemoveAll(filepath.Join(dir, name))
		}
	}
	fmt.Fprintf(out, "\nstate roots agree at the build and at all %d blocks (%s); final root %v\n\n", len(w.blocks), strings.Join(f.impls, ", "), roots[len(roots)-1])
	printReport(out, f, results)
	return nil
}

func runSide(s side, f *benchFlags, w *workload, roots []hashkey.Hash, ref string, out io.Writer) (*sideResult, error) {
	name := s.Name()
	res := &sideResult{name: name}
	check := func(block int, got hashkey.Hash) error {
		if ref == "" {
			roots[block] = got
			return nil
		}
		if got != roots[block] {
			return fmt.Errorf("STATE ROOT MISMATCH at block %d: %s computed %v, %s computed %v", block, name, got, ref, roots[block])
		}
		return nil
	}
	fmt.Fprintf(out, "[%s] build ...", name)
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	var err error
	var root hashkey.Hash
	stopPeak := samplePeakHeap(&res.buildPeak)
	if res.buildLoad, err = timed(name, "build-load", s.BuildLoad); err != nil {
		return nil, fmt.Errorf("%s: build: %w", name, err)
	}
	if res.buildRoot, err = timed(name, "build-root", func() (e error) { root, e = s.BuildRoot(); return e }); err != nil {
		return nil, fmt.Errorf("%s: build root: %w", name, err)
	}
	if res.buildPers, err = timed(name, "build-persist", s.BuildPersist); err != nil {
		return nil, fmt.Errorf("%s: build persist: %w", name, err)
	}
	stopPeak()
	runtime.ReadMemStats(&m1)
	res.buildAlloc = memDelta(&m0, &m1)
	if err := check(0, root); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, " %v (load %v, root %v, persist %v); root %v\n", res.build().Round(time.Millisecond),
		res.buildLoad.Round(time.Millisecond), res.buildRoot.Round(time.Millisecond), res.buildPers.Round(time.Millisecond), root)

	settleGC()
	s.StatsStart()
	runtime.ReadMemStats(&m0)
	offHeap0 := trie.OffHeapBytes()
	resetPeakRSS()
	start := time.Now()
	tr, err := newBlockTrace(f.trace)
	if err != nil {
		return nil, err
	}
	defer tr.stop()
	var blog io.Writer = io.Discard
	if f.blockLog != "" {
		lf, err := os.OpenFile(f.blockLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		defer lf.Close()
		blog = lf
	}
	for i := range w.blocks {
		b := &w.blocks[i]
		n := uint64(i + 1)
		if err := tr.at(n); err != nil {
			return nil, err
		}
		da, err := timed(name, "apply", func() error { return s.Apply(b) })
		if err != nil {
			return nil, fmt.Errorf("%s: block %d: apply: %w", name, n, err)
		}
		dr, err := timed(name, "root", func() (e error) { root, e = s.Root(); return e })
		if err != nil {
			return nil, fmt.Errorf("%s: block %d: root: %w", name, n, err)
		}
		dp, err := timed(name, "persist", func() error { return s.Persist(n, n%uint64(f.persistEvery) == 0) })
		if err != nil {
			return nil, fmt.Errorf("%s: block %d: persist: %w", name, n, err)
		}
		if err := check(int(n), root); err != nil {
			return nil, err
		}
		res.apply, res.root, res.persist = append(res.apply, da), append(res.root, dr), append(res.persist, dp)
		res.total = append(res.total, da+dr+dp)
		fmt.Fprintf(blog, "%s,%d,%s,%s,%s,%.3f\n", name, n, ms(da), ms(dr), ms(dp), time.Since(start).Seconds()-(da+dr+dp).Seconds())
	}
	wall := time.Since(start)
	res.blockPeakRSS = peakRSS()
	runtime.ReadMemStats(&m1)
	res.blockAlloc = memDelta(&m0, &m1)
	res.stats = s.StatsLine()
	fmt.Fprintf(out, "[%s] %d blocks in %v (mean %v/block, peak RSS %s); %s\n", name, len(w.blocks), wall.Round(time.Millisecond), res.total.mean().Round(time.Microsecond), fmtBytes(res.blockPeakRSS), res.stats)
	fmt.Fprintf(out, "[%s] %s\n", name, heapAfterBlocks(&m0, offHeap0, len(w.blocks)%f.persistEvery*(f.cfg.blockAccounts+f.cfg.blockSlots)))
	if f.heapprofile != "" {
		if err := writeHeapProfile(f.heapprofile + "." + name); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// heapAfterBlocks reports how much the live heap and hexstate's memory
// outside it (trie.OffHeapBytes) grew over the blocks (after a GC, against
// before's HeapAlloc and offHeapBefore, read after a GC too) and that growth
// per write of the blocks not yet persisted: the unpersisted frames' memory,
// plus whatever the caches grew by (a small -cache-mb isolates the frames).
func heapAfterBlocks(before *runtime.MemStats, offHeapBefore int64, unpersistedWrites int) string {
	settleGC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	off := trie.OffHeapBytes()
	grown := int64(m.HeapAlloc) - int64(before.HeapAlloc) + off - offHeapBefore
	s := fmt.Sprintf("live heap after the blocks: %s, off the heap %s; %+.1f MiB since the build, both counted", fmtBytes(m.HeapAlloc), fmtBytes(uint64(off)), float64(grown)/(1<<20))
	if unpersistedWrites > 0 {
		s += fmt.Sprintf(" (%.0f B per write of the %d unpersisted writes)", float64(grown)/float64(unpersistedWrites), unpersistedWrites)
	}
	return s
}

// settleGC collects twice with a pause between, so that the memory outside
// the heap that belonged to unreachable objects (freed by their cleanups,
// which run after a collection) is freed before it is counted.
func settleGC() {
	runtime.GC()
	time.Sleep(50 * time.Millisecond)
	runtime.GC()
}

// writeHeapProfile writes the live heap (as of the last GC) to path.
func writeHeapProfile(path string) error {
	hf, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(hf, 0); err != nil {
		hf.Close()
		return err
	}
	return hf.Close()
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/1e6) }

func fmtBytes(b uint64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.2fGiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1fMiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1fKiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%dB", b)
}

func ratio(a, b time.Duration) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", float64(a)/float64(b))
}

func printReport(out io.Writer, f *benchFlags, rs []*sideResult) {
	nb := uint64(max(1, len(rs[0].total)))
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(out, "build (s) and allocations\n")
	fmt.Fprintln(tw, "impl\tbuild\tload\troot\tpersist\tallocs\talloc bytes\tpeak heap\t")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t%.2f\t%d\t%s\t%s\t\n", r.name, r.build().Seconds(), r.buildLoad.Seconds(), r.buildRoot.Seconds(), r.buildPers.Seconds(),
			r.buildAlloc.mallocs, fmtBytes(r.buildAlloc.bytes), fmtBytes(r.buildPeak))
	}
	tw.Flush()

	fmt.Fprintf(out, "\nper block (ms), %d blocks, persist every %d\n", nb, f.persistEvery)
	fmt.Fprintln(tw, "impl\ttotal mean\tp50\tp99\tapply mean\tp50\tp99\troot mean\tp50\tp99\tpersist mean\tp50\tp99\tallocs/blk\tbytes/blk\tpeak RSS\t")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s", r.name)
		for _, p := range []phaseTimes{r.total, r.apply, r.root, r.persist} {
			fmt.Fprintf(tw, "\t%s\t%s\t%s", ms(p.mean()), ms(p.pct(0.5)), ms(p.pct(0.99)))
		}
		fmt.Fprintf(tw, "\t%d\t%s\t%s\t\n", r.blockAlloc.mallocs/nb, fmtBytes(r.blockAlloc.bytes/nb), fmtBytes(r.blockPeakRSS))
	}
	tw.Flush()

	var geth *sideResult
	for _, r := range rs {
		if r.name == "geth" {
			geth = r
		}
	}
	if geth == nil {
		return
	}
	fmt.Fprintf(out, "\nratios impl/geth (< 1: faster than geth; target per-block mean <= 0.50)\n")
	fmt.Fprintln(tw, "impl\tbuild\tblock mean\tp50\tp99\tapply\troot\tpersist\tallocs/blk\tbytes/blk\ttarget\t")
	for _, r := range rs {
		if r == geth {
			continue
		}
		verdict := "MET"
		if float64(r.total.mean()) > 0.5*float64(geth.total.mean()) {
			verdict = "MISSED"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.2f\t%.2f\t%s\t\n", r.name, ratio(r.build(), geth.build()),
			ratio(r.total.mean(), geth.total.mean()), ratio(r.total.pct(0.5), geth.total.pct(0.5)), ratio(r.total.pct(0.99), geth.total.pct(0.99)),
			ratio(r.apply.mean(), geth.apply.mean()), ratio(r.root.mean(), geth.root.mean()), ratio(r.persist.mean(), geth.persist.mean()),
			float64(r.blockAlloc.mallocs)/float64(max(1, geth.blockAlloc.mallocs)), float64(r.blockAlloc.bytes)/float64(max(1, geth.blockAlloc.bytes)), verdict)
	}
	tw.Flush()
}

// samplePeakHeap records in peak the largest live heap (bytes in heap objects,
// including not yet collected garbage) seen every 10 ms until stop is called.
func samplePeakHeap(peak *uint64) (stop func()) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() {
		metrics.Read(sample)
		*peak = max(*peak, sample[0].Value.Uint64())
	}
	stopSampling := sampleEvery(10*time.Millisecond, read)
	return func() {
		stopSampling()
		read()
	}
}

// sampleEvery calls read every d on a goroutine of its own until stop is
// called; stop returns once read has returned for the last time.
func sampleEvery(d time.Duration, read func()) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				read()
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}
