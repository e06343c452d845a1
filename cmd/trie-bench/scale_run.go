package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/rocks"
)

// runScale is -mode scale: a state far larger than the caches, built once per
// implementation by streaming into a store kept in -dir, then blocks with
// reads and writes generated from the seed as they run. A kept store is
// reopened with -reuse and continues at its next block, so one build serves
// several runs (e.g. -persist-every 1, then 64). Every block's state root and
// read digest is checked against the roots file in -dir.
func runScale(f *benchFlags, out io.Writer) error {
	if f.dir == "" {
		return errors.New("-mode scale needs -dir (the stores are kept there)")
	}
	if err := os.MkdirAll(f.dir, 0o755); err != nil {
		return err
	}
	shape := scaleShape{seed: f.cfg.seed, accounts: f.cfg.accounts}
	slots, giants := 0, 0
	for c := 0; c < shape.accounts; c += 10 {
		slots += shape.slotCount(c)
		if shape.tier(c) == tierGiant {
			giants++
		}
	}
	hot := shape.hotContracts()
	fmt.Fprintf(out, "scale state: %d accounts, %d contracts, %d slots (%d hot contracts with >= 1,000 slots, %d with >= 100,000); per block %d account + %d slot writes, %d account + %d slot reads\n",
		shape.accounts, shape.contracts(), slots, len(hot), giants, f.scale.accWrites, f.scale.slotWrites, f.scale.accReads, f.scale.slotReads)
	roots, err := openRootLog(f.dir, shape, f.scale)
	if err != nil {
		return err
	}
	defer roots.Close()
	resPath := scaleResultsPath(f)
	res, err := openResults(resPath)
	if err != nil {
		return err
	}
	defer res.Close()
	var results []*sideResult
	var stats []map[string]uint64
	for _, name := range f.impls {
		r, st, err := runScaleSide(f, name, shape, slots, hot, roots, res, out)
		if err != nil {
			return err
		}
		results, stats = append(results, r), append(stats, st)
	}
	fmt.Fprintf(out, "\nstate roots and read digests agree at every block (%s); results appended to %s\n\n", roots.path, resPath)
	printReport(out, f, results)
	printScaleStats(out, results, stats, f.scale.accReads+f.scale.slotReads+f.scale.accWrites+f.scale.slotWrites)
	return nil
}

// scaleResultsPath is where a scale run appends its records: -results, or
// results.jsonl in -dir.
func scaleResultsPath(f *benchFlags) string {
	if f.results != "" {
		return f.results
	}
	return filepath.Join(f.dir, "results.jsonl")
}

// newScaleSide opens implementation name's store in dir.
func newScaleSide(name, dir string, s scaleShape, cacheMB int, build string) (scaleSide, error) {
	switch name {
	case "geth":
		return newGethTrieScale(dir, s, cacheMB)
	case "geth-state":
		return newGethStateScale(dir, s, cacheMB)
	}
	return newHexScale(name, dir, s, cacheMB, build == "random")
}

// runScaleSide builds (or reopens) one implementation's store and runs the blocks.
func runScaleSide(f *benchFlags, name string, shape scaleShape, slots int, hot []int32, roots *rootLog, res *resultsWriter, out io.Writer) (*sideResult, map[string]uint64, error) {
	st, built, err := readStoreState(f.dir, name)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: state file: %w", name, err)
	}
	_, statErr := os.Stat(filepath.Join(f.dir, name))
	switch {
	case built && !f.reuse:
		return nil, nil, fmt.Errorf("%s: a built store is in %s: pass -reuse to continue on it, or remove it", name, f.dir)
	case !built && statErr == nil:
		return nil, nil, fmt.Errorf("%s: %s holds an unfinished build: remove it", name, filepath.Join(f.dir, name))
	}
	resetPeakRSS()
	s, err := newScaleSide(name, f.dir, shape, f.cacheMB, f.build)
	if err != nil {
		return nil, nil, err
	}
	defer s.Close()
	r := &sideResult{name: name}
	if built {
		fmt.Fprintf(out, "[%s] reusing the store at block %d\n", name, st.Block)
		if err := s.Open(st.Block, st.Root); err != nil {
			return nil, nil, err
		}
	} else {
		path, err := ensureIndex(f.dir, shape)
		if err != nil {
			return nil, nil, err
		}
		idx, err := openIndex(path)
		if err != nil {
			return nil, nil, err
		}
		fmt.Fprintf(out, "[%s] build ...", name)
		var root hashkey.Hash
		r.buildLoad, err = timed(name, "build", func() (e error) { root, e = s.Build(idx); return e })
		idx.Close()
		if err != nil {
			return nil, nil, err
		}
		if err := roots.check(name, 0, root, 0); err != nil {
			return nil, nil, err
		}
		st = storeState{Block: 0, Root: root}
		if err := writeStoreState(f.dir, name, st); err != nil {
			return nil, nil, err
		}
		fmt.Fprintf(out, " %v; root %v\n", r.buildLoad.Round(time.Millisecond), root)
		if _, ok := s.(*hexScale); ok && f.keccak { // issue 9's yardstick is for hexstate's build
			if err := reportKeccak(out, name, path, shape, r.buildLoad); err != nil {
				return nil, nil, err
			}
		}
	}
	s.Stats() // start counting
	runtime.GC()
	var store *rocks.Store
	if h, ok := s.(*hexScale); ok {
		store = h.store
	}
	stopMem := sampleMemSplit(store)
	first, sums := st.Block+1, map[string]uint64{}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	start := time.Now()
	for k := range f.cfg.blocks {
		n := first + uint64(k)
		b := genScaleBlock(shape, hot, f.scale, n)
		var d readDigest
		var root hashkey.Hash
		da, err := timed(name, "apply", func() (e error) { d, e = s.Apply(b); return e })
		if err != nil {
			return nil, nil, fmt.Errorf("%s: block %d: apply: %w", name, n, err)
		}
		dr, err := timed(name, "root", func() (e error) { root, e = s.Root(); return e })
		if err != nil {
			return nil, nil, fmt.Errorf("%s: block %d: root: %w", name, n, err)
		}
		commit := (k+1)%f.persistEvery == 0 || k == f.cfg.blocks-1
		if k == f.cfg.blocks-1 && f.heapprofile != "" { // the frames the last persist folds
			if err := writeHeapProfile(f.heapprofile + "." + name); err != nil {
				return nil, nil, err
			}
		}
		dp, err := timed(name, "persist", func() error { return s.Persist(n, commit) })
		if err != nil {
			return nil, nil, fmt.Errorf("%s: block %d: persist: %w", name, n, err)
		}
		if err := roots.check(name, n, root, d); err != nil {
			return nil, nil, err
		}
		r.apply, r.root, r.persist = append(r.apply, da), append(r.root, dr), append(r.persist, dp)
		r.total = append(r.total, da+dr+dp)
		bs := s.Stats()
		for k, v := range bs {
			sums[k] += v
		}
		if err := res.write(blockRecord{Kind: "block", Label: f.label, Impl: name, Accounts: shape.accounts, Slots: slots, Cadence: f.persistEvery,
			Block: n, ApplyMs: msf(da), RootMs: msf(dr), PersistMs: msf(dp), TotalMs: msf(da + dr + dp), Stats: bs}); err != nil {
			return nil, nil, err
		}
		st = storeState{Block: n, Root: root}
	}
	runtime.ReadMemStats(&m1)
	r.blockAlloc = memDelta(&m0, &m1) // includes generating the blocks' ops
	memAtPeak := stopMem()
	if err := writeStoreState(f.dir, name, st); err != nil {
		return nil, nil, err
	}
	var vsst uint64
	if h, ok := s.(*hexScale); ok {
		vsst = h.VertexSSTBytes()
	}
	if err := s.Close(); err != nil {
		return nil, nil, fmt.Errorf("%s: close: %w", name, err)
	}
	size := dirSize(filepath.Join(f.dir, name))
	peak := peakRSS()
	r.blockPeakRSS = peak // the table's column: VmHWM over this implementation's part
	fmt.Fprintf(out, "[%s] blocks %d-%d in %v (mean %v/block); store %s (vertex SSTs %s); peak RSS %s\n", name, first, st.Block, time.Since(start).Round(time.Millisecond),
		r.total.mean().Round(time.Microsecond), fmtBytes(size), fmtBytes(vsst), fmtBytes(peak))
	memAtPeak.print(out, name)
	err = res.write(runRecord{Kind: "run", Label: f.label, Impl: name, Accounts: shape.accounts, Slots: slots, Cadence: f.persistEvery, FirstBlock: first,
		Blocks: f.cfg.blocks, BuildSec: r.buildLoad.Seconds(), StoreBytes: size, VertexSSTBytes: vsst, PeakRSS: peak,
		MeanMs: msf(r.total.mean()), P50Ms: msf(r.total.pct(0.5)), P99Ms: msf(r.total.pct(0.99))})
	return r, sums, err
}

func msf(d time.Duration) float64 { return float64(d) / 1e6 }

// printScaleStats prints hexstate's read counters per block: backend reads
// (point, range and batched lookups, records returned) against vertex-cache
// misses.
func printScaleStats(out io.Writer, rs []*sideResult, stats []map[string]uint64, touched int) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(out, "\nhexstate read path per block (backend = what the vertex cache missed; records/miss = backend keys per cold lookup)\n")
	fmt.Fprintln(tw, "impl\tcache misses\tpoint reads\trange reads\tbatch reads (keys)\trecords\trecords/miss\tleaf reads\tlookups\tcold\tkeys/cold lookup\trocks data blocks read\tper touched key\tindex blocks read\tfilter blocks read\tfile reads\tfile bytes\t")
	for i, r := range rs {
		s := stats[i]
		if len(s) == 0 {
			continue
		}
		nb := uint64(max(1, len(r.total)))
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d (%d)\t%d\t%.2f\t%d\t%d\t%d\t%.2f\t%d\t%.2f\t%d\t%d\t%d\t%s\t\n", r.name, s["cache_misses"]/nb, s["backend_point_reads"]/nb, s["backend_range_reads"]/nb, s["backend_batch_reads"]/nb, s["backend_batch_keys"]/nb,
			s["backend_records"]/nb, float64(s["backend_records"])/float64(max(1, s["cache_misses"])),
			s["backend_leaf_reads"]/nb, s["lookups"]/nb, s["cold_lookups"]/nb, float64(s["cold_lookup_keys"])/float64(max(1, s["cold_lookups"])),
			s["rocks_data_block_reads"]/nb, float64(s["rocks_data_block_reads"])/float64(nb)/float64(max(1, touched)),
			s["rocks_index_block_reads"]/nb, s["rocks_filter_block_reads"]/nb, s["rocks_file_reads"]/nb,
			fmtBytes(s["rocks_file_read_bytes"]/nb))
	}
	tw.Flush()
}

// dirSize returns the bytes of the files under dir.
func dirSize(dir string) uint64 {
	var n uint64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += uint64(fi.Size())
			}
		}
		return nil
	})
	return n
}

// resetPeakRSS resets the process's peak resident set (VmHWM), so that each
// implementation's part of a run reports its own peak.
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// peakRSS returns VmHWM from /proc/self/status (0 where there is none).
func peakRSS() uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
