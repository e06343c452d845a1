// Command trie-bench benchmarks hexstate against go-ethereum's trie on a
// state workload (a bulk-built state, then blocks of account and storage
// updates with a state root per block and periodic persistence), asserting
// that both compute the same state root at every block. -mode bulkload
// compares hexstate's bulk load with the time it takes just to keccak every
// node of the trie.
//
// The module also holds the differential tests and benchmarks that use
// go-ethereum as hexstate's oracle; it is a separate module so the root module
// never depends on go-ethereum. See README.md.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"

	"github.com/hexstate/hexstate/rocks"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

type benchFlags struct {
	mode         string
	impls        []string
	cfg          wlConfig
	persistEvery int
	dir          string
	cpuprofile   string
	memprofile   string
	heapprofile  string
	trace        string // FILE:FROM-TO, an execution trace of blocks FROM..TO
	blockLog     string // FILE: per-block phase times (CSV)
	cacheMB      int
	reps         int
	build        string // hexstate's build: bulk (BulkLoadAccounts + Persist) or stream (StateLoader)
	scale        scaleBlockCfg
	reuse        bool   // scale: continue on stores kept in -dir
	keccak       bool   // scale: after a build, time one core's keccak of every node (scaleKeccak)
	results      string // scale: results file (JSON lines)
	label        string // scale: a label for the results
	membound     string // scale: run each implementation under membound with this limit
	memboundCmd  string // scale: the membound tool
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "trie-bench:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	var f benchFlags
	fs := flag.NewFlagSet("trie-bench", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: trie-bench [flags]\n\n"+
			"Runs a state workload on each implementation in turn (same workload, same seed)\n"+
			"and prints build and per-block times by phase, allocations and read stats.\n"+
			"State roots must agree at every block, or the run fails.\n\nflags:\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&f.mode, "mode", "blocks", "blocks: build + blocks workload; bulkload: bulk load vs keccak of all nodes (in memory); scale: streamed build into stores kept in -dir, blocks with reads, disk-bound (see README)")
	impls := fs.String("impl", "hexstate-v2,hexstate-v1,geth", "comma-separated implementations: hexstate-v2, hexstate-v1, geth; -mode scale also geth-state (StateDB on pathdb's flat state)")
	fs.IntVar(&f.cfg.accounts, "accounts", 1_000_000, "accounts in the initial state")
	fs.Float64Var(&f.cfg.storageFrac, "storage-frac", 0.1, "fraction of accounts with storage (1-8 slots each)")
	fs.IntVar(&f.cfg.blocks, "blocks", 200, "blocks to apply")
	fs.IntVar(&f.cfg.blockAccounts, "block-accounts", 2000, "account updates (nonce, balance) per block")
	fs.IntVar(&f.cfg.blockSlots, "block-slots", 4000, "storage writes per block (overwrites, new slots, deletes)")
	fs.IntVar(&f.persistEvery, "persist-every", 1, "persist every N blocks (hexstate db.Persist, geth triedb.Commit)")
	fs.StringVar(&f.dir, "dir", "", "directory for the databases (default: a temporary one, removed afterwards)")
	fs.StringVar(&f.cpuprofile, "cpuprofile", "", "write a CPU profile of the measured part to this file (samples labelled impl=..., phase=...)")
	fs.StringVar(&f.memprofile, "memprofile", "", "write an allocation profile to this file at the end")
	fs.StringVar(&f.heapprofile, "heapprofile", "", "write the live heap to this file after each implementation's blocks, before it persists what is left (suffixed with the implementation's name): what the unpersisted frames hold")
	fs.StringVar(&f.blockLog, "block-log", "", "blocks mode: write each block's phase times to this file (CSV: impl,block,apply_ms,root_ms,persist_ms,start_s)")
	fs.StringVar(&f.trace, "trace", "", "FILE:FROM-TO: write an execution trace (go tool trace) of blocks FROM to TO of the first implementation")
	fs.Uint64Var(&f.cfg.seed, "seed", 1, "workload seed")
	fs.IntVar(&f.cacheMB, "cache-mb", 256, "cache size in MiB: hexstate vertex cache and RocksDB block cache each; geth clean trie cache and Pebble cache each")
	fs.IntVar(&f.reps, "reps", 3, "bulkload mode: repetitions (the fastest is reported)")
	fs.StringVar(&f.build, "build", "bulk", "how hexstate builds the initial state: bulk (BulkLoadAccounts in a frame, then Persist) or stream (StateLoader: memory independent of the state's size)")
	recs := fs.String("records", "", "hexstate record variant of new stores: keys-once or child-key-copies (default: the trie package's, keys-once); an existing store follows its own")
	fs.BoolVar(&rocksStats, "rocks-stats", true, "hexstate: RocksDB statistics, for the read-path table's block and file counts (off: as a client runs it)")
	fs.BoolVar(&rocksLowPriority, "rocks-low-priority", false, "hexstate: run RocksDB's flushes and compactions at the lowest CPU priority")
	ingestMB := fs.Int64("rocks-ingest-mb", 0, "hexstate: write batches of at least this many MiB as ingested SST files (rocks.Options.IngestBytes; 0: the default, -1: never)")
	fs.IntVar(&rocksBlockBytes, "rocks-block-kb", 0, "hexstate: RocksDB data block size in KiB for the files a run writes (rocks.Options.BlockSizeBytes; 0: the default)")
	fs.BoolVar(&journalBlocks, "journal", false, "hexstate: journal every block's frame (DB.Journal) in the persist phase")
	fs.BoolVar(&journalReopen, "journal-reopen", false, "hexstate: at the end, reopen the store and time the journal's replay")
	fs.IntVar(&f.scale.accReads, "block-account-reads", 2000, "scale: reads of accounts per block (before its writes)")
	fs.IntVar(&f.scale.slotReads, "block-slot-reads", 4000, "scale: reads of initial slots per block")
	fs.BoolVar(&f.keccak, "keccak", false, "scale: after each hexstate build, time one core's keccak of the RLP of every node of the state, the yardstick of issue 9 for the build, in the same run")
	fs.BoolVar(&f.reuse, "reuse", false, "scale: continue on the stores already built in -dir (skip their build) at their next block")
	fs.StringVar(&f.results, "results", "", "scale: append per-block results (JSON lines) to this file (default <dir>/results.jsonl)")
	fs.StringVar(&f.label, "label", "", "scale: a label for this run in the results file")
	fs.StringVar(&f.membound, "membound", "", "scale: disk-bound mode: run each implementation in a child trie-bench under -membound-cmd with this memory limit, page cache included (e.g. 300M; needs root)")
	fs.StringVar(&f.memboundCmd, "membound-cmd", "/work/shared/tools/membound", "scale: the membound tool (usage: membound LIMIT COMMAND [ARGS...])")
	fs.StringVar(&prefetchMode, "prefetch", prefetchMode, "hexstate: hand each block's keys to Frame.Prefetch/PrefetchReads: off, sync (before the block), async (beside it, as a client's prefetcher), auto (scale: sync, blocks: off)")
	mallocArenas := fs.Int("malloc-arenas", 2, "limit glibc's malloc arenas to this many for the process (rocks.LimitMallocArenas, as docs/integration.md recommends; 0: glibc's default, eight per core)")
	fs.BoolVar(&buildLeafIndex, "build-leaf-index", true, "scale, hexstate: build the leaf index of a reused store that has none (timed, before the blocks)")
	fs.BoolVar(&prefetchUpperLevels, "prefetch-upper-levels", true, "scale, hexstate: on opening a reused store, read the account trie's upper branches into the vertex cache (Frame.PrefetchUpperLevels, timed, before the blocks), as a client does after a restart")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if err := checkPrefetchMode(prefetchMode); err != nil {
		return err
	}
	rocksBlockBytes <<= 10
	rocksIngestBytes = *ingestMB << 20 // negative stays negative: never
	if *mallocArenas > 0 {
		if err := rocks.LimitMallocArenas(*mallocArenas); err != nil {
			return fmt.Errorf("-malloc-arenas: %w", err)
		}
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	hr, err := vertex.ParseRecords(*recs)
	if err != nil {
		return fmt.Errorf("-records: %w", err)
	}
	hexRecords = hr
	for _, s := range strings.Split(*impls, ",") {
		s = strings.TrimSpace(s)
		switch s {
		case "":
			continue
		case "hexstate-v2", "hexstate-v1", "geth":
			f.impls = append(f.impls, s)
		case "geth-state":
			if f.mode != "scale" {
				return errors.New("-impl geth-state is for -mode scale")
			}
			f.impls = append(f.impls, s)
		default:
			return fmt.Errorf("unknown -impl %q (want hexstate-v2, hexstate-v1, geth)", s)
		}
	}
	if len(f.impls) == 0 {
		return errors.New("no -impl")
	}
	if f.cfg.accounts < 1 || f.cfg.blocks < 0 || f.persistEvery < 1 || f.cacheMB < 1 || f.reps < 1 {
		return errors.New("-accounts, -persist-every, -cache-mb and -reps must be positive, -blocks not negative")
	}

	if prefetchMode == "auto" {
		prefetchMode = "off"
		if f.mode == "scale" {
			prefetchMode = "sync"
		}
	}
	if f.mode == "scale" && f.membound != "" {
		return runMembound(&f, args, out) // each child profiles itself
	}
	if f.cpuprofile != "" {
		pf, err := os.Create(f.cpuprofile)
		if err != nil {
			return err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if f.mode == "scale" {
		f.scale.accWrites, f.scale.slotWrites = f.cfg.blockAccounts, f.cfg.blockSlots
		fmt.Fprintf(out, "trie-bench: mode=scale impl=%s accounts=%d blocks=%d persist-every=%d cache-mb=%d seed=%d dir=%s reuse=%v GOMAXPROCS=%d %s\n",
			strings.Join(f.impls, ","), f.cfg.accounts, f.cfg.blocks, f.persistEvery, f.cacheMB, f.cfg.seed, f.dir, f.reuse, runtime.GOMAXPROCS(0), runtime.Version())
		return runScale(&f, out)
	}
	fmt.Fprintf(out, "trie-bench: mode=%s impl=%s accounts=%d storage-frac=%g blocks=%d block-accounts=%d block-slots=%d persist-every=%d cache-mb=%d seed=%d GOMAXPROCS=%d %s\n",
		f.mode, strings.Join(f.impls, ","), f.cfg.accounts, f.cfg.storageFrac, f.cfg.blocks, f.cfg.blockAccounts, f.cfg.blockSlots,
		f.persistEvery, f.cacheMB, f.cfg.seed, runtime.GOMAXPROCS(0), runtime.Version())
	w := genWorkload(f.cfg)
	fmt.Fprintf(out, "workload: %d accounts, %d with storage, %d slots; per block %d account updates, %d slot writes (in all %d new slots, %d deletes)\n\n",
		len(w.accounts), len(w.storage), w.slots, f.cfg.blockAccounts, f.cfg.blockSlots, w.newSlots, w.delSlots)

	switch f.mode {
	case "blocks":
		err = runBlocks(&f, w, out)
	case "bulkload":
		err = runBulkload(&f, w, out)
	default:
		err = fmt.Errorf("unknown -mode %q (want blocks or bulkload)", f.mode)
	}
	if err != nil {
		return err
	}
	if f.memprofile != "" {
		runtime.GC()
		mf, err := os.Create(f.memprofile)
		if err != nil {
			return err
		}
		defer mf.Close()
		if err := pprof.Lookup("allocs").WriteTo(mf, 0); err != nil {
			return err
		}
	}
	if f.cpuprofile != "" || f.memprofile != "" {
		fmt.Fprintf(out, "\nprofiles: go tool pprof -top %s   (add -tagfocus=phase=root or impl=geth to isolate; -sample_index=alloc_space for -memprofile)\n",
			strings.TrimSpace(f.cpuprofile+" "+f.memprofile))
	}
	return nil
}

// hexRecords (flag -records) is the record variant hexstate stores are
// created with; 0 is the trie package's default.
var hexRecords vertex.Records

// hexOptions returns the options hexstate DBs of implementation name open
// with, on a cache of cacheMB MiB.
func hexOptions(name string, cacheMB int) *trie.Options {
	return &trie.Options{Format: formatOf(name), CacheBytes: cacheMB << 20, Records: hexRecords}
}

// formatOf maps an implementation name to its hexstate format.
func formatOf(name string) vertex.Format {
	if name == "hexstate-v1" {
		return vertex.FormatV1
	}
	return vertex.FormatV2
}
