// Command trie-migrate rewrites a hexstate database into another format version
// (v1 → v2 by default, or back) without a resync and without re-hashing: it
// copies the vertex records into a new directory, giving each vertex its ID
// in the new layout (package migrate), checkpointing as it goes (an
// interrupted run resumes when started again with the same arguments), then
// verifies the copy (root, record count, proofs of a sample of accounts and
// slots; -verify full recomputes every key), and with -replace swaps the
// directories, keeping the old one as a backup (a -replace stopped between
// its two renames is finished by the same command run again).
//
//	trie-migrate [-to v2] [-verify sample|full] [-replace] SRC [DST]
//
// DST defaults to SRC.<format>. The source is opened read-only. Before
// writing anything it refuses a source that is not a hexstate database (a
// missing or empty directory included), a target that overlaps the source,
// a target holding a database of its own, and with -replace an existing
// backup name. Stop it with Ctrl-C at any time.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/hexstate/hexstate/migrate"
	"github.com/hexstate/hexstate/rocks"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// config is what the flags say.
type config struct {
	to        vertex.Format
	verify    migrate.VerifyMode
	samples   int
	every     int
	replace   bool
	src, dst  string
	noSync    bool
	cacheMiB  int
	preload   int            // trie.CopyOptions.PreloadBytes: 0 its default, negative never
	leafIndex bool           // give the target a leaf index
	records   vertex.Records // the target's record variant; 0: the library's default
	method    trie.CopyMethod
	fullZstd  bool // rocks.Options.FullLoadCompression for the target
}

func main() {
	// trie-migrate promises a bounded resident memory (docs/benchmarks.md §7).
	limitMallocArenas()
	tightenGC()
	to := flag.String("to", "v2", "target format: v1 or v2")
	verify := flag.String("verify", "sample", "verification: sample (root, record count, sampled proofs) or full (also recompute every key)")
	samples := flag.Int("samples", 2000, "accounts (and slots) proved by the verification")
	every := flag.Int("checkpoint", 1<<20, "records copied between two checkpoints")
	replace := flag.Bool("replace", false, "after a verified migration, move SRC to SRC.<old format>.bak and DST to SRC")
	noSync := flag.Bool("nosync", false, "do not fsync the target's writes (a power loss may then lose checkpointed work)")
	cache := flag.Int("cache", 64, "MiB of block cache for reading the source")
	preload := flag.Int("preload", trie.DefaultPreloadBytes>>20, "MiB within which a source not laid out by the builder (one grown block by block) is read into memory by sequential scans before the copy, instead of seek by seek (0: never)")
	records := flag.String("records", "", "the target's record variant: keys-once or child-key-copies (default: keys-once); with the source's layout as -to, converts the variant")
	method := flag.String("method", "auto", "how the source is read: walk (its trie, records and keys copied), scan (one sequential scan of a v1 source laid out by the builder, copied into v2), rebuild (the target built from the source's leaf index, every key computed and the root checked), or auto (scan where it can, rebuild a scattered source larger than -preload, else walk)")
	fullZstd := flag.Bool("full-compression", false, "compress the target's files at ZSTD's default level, as compactions do: ~2.5% fewer bytes, a slower copy (default: ZSTD level -1 until compactions rewrite them)")
	leafIndex := flag.Bool("leaf-index", true, "after verifying, give the target a leaf index: the source's, copied, or one built from the trie (without it cold reads walk the trie)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: trie-migrate [flags] SRC [DST]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() < 1 || flag.NArg() > 2 {
		flag.Usage()
		os.Exit(2)
	}
	cfg := config{samples: *samples, every: *every, replace: *replace, src: flag.Arg(0), dst: flag.Arg(1), noSync: *noSync, cacheMiB: *cache, preload: preloadBytes(*preload), leafIndex: *leafIndex, fullZstd: *fullZstd}
	var err error
	if cfg.to, err = parseFormat(*to); err == nil {
		cfg.verify, err = parseVerify(*verify)
	}
	if err == nil {
		cfg.records, err = vertex.ParseRecords(*records)
	}
	if err == nil {
		cfg.method, err = parseMethod(*method)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "trie-migrate:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "trie-migrate:", err)
		if errors.Is(err, rocks.ErrNoSpace) {
			fmt.Fprintln(os.Stderr, "trie-migrate: the disk is full: free space (or give a target on a larger disk) and run the same command again; it resumes from the last persisted chunk")
		}
		os.Exit(1)
	}
}

func parseFormat(s string) (vertex.Format, error) {
	switch s {
	case "v1":
		return vertex.FormatV1, nil
	case "v2":
		return vertex.FormatV2, nil
	}
	return 0, fmt.Errorf("unknown format %q (want v1 or v2)", s)
}

func parseVerify(s string) (migrate.VerifyMode, error) {
	switch s {
	case "sample":
		return migrate.VerifySample, nil
	case "full":
		return migrate.VerifyFull, nil
	}
	return 0, fmt.Errorf("unknown verification %q (want sample or full)", s)
}

func parseMethod(s string) (trie.CopyMethod, error) {
	switch s {
	case "auto":
		return trie.CopyAuto, nil
	case "walk":
		return trie.CopyWalk, nil
	case "rebuild":
		return trie.CopyRebuild, nil
	case "scan":
		return trie.CopyScan, nil
	}
	return 0, fmt.Errorf("unknown method %q (want auto, walk, scan or rebuild)", s)
}

func run(ctx context.Context, cfg *config) error {
	// "db/" must name db itself: otherwise the default target would be db/.v2,
	// inside the source.
	srcDir := filepath.Clean(cfg.src)
	if cfg.replace {
		if done, err := finishReplace(srcDir, cfg); done || err != nil {
			return err
		}
	}
	src, from, err := openSource(srcDir, cfg.cacheMiB)
	if err != nil {
		return err
	}
	defer src.Close()
	if err := checkJournal(src, srcDir); err != nil {
		return err
	}
	if from == cfg.to && (cfg.records == 0 || cfg.records == src.Records()) {
		return fmt.Errorf("source %s is already in format %v with %v records", srcDir, cfg.to, src.Records())
	}
	dstDir := targetDir(srcDir, cfg)
	backup := ""
	if cfg.replace {
		backup = srcDir + "." + from.String() + ".bak"
	}
	if err := migrate.CheckPaths(srcDir, dstDir, backup); err != nil {
		return err
	}
	fresh, err := checkTarget(dstDir)
	if err != nil {
		return err
	}
	root, err := src.StateRoot()
	if err != nil {
		return fmt.Errorf("source %s: %w", srcDir, err)
	}
	if fresh {
		err := migrate.Create(dstDir, root, func(dir string) error {
			db, err := openTarget(dir, cfg)
			if err != nil {
				return err
			}
			return db.Close()
		})
		if err != nil {
			return err
		}
	}
	dst, err := openTarget(dstDir, cfg)
	if err != nil {
		return err
	}
	fmt.Printf("migrating %s (format %v, block %d, root %v)\n       to %s (format %v)\n", srcDir, from, src.Block(), root, dstDir, cfg.to)
	p := newProgress(os.Stdout)
	cpu := newCopyCPU()
	res, err := migrate.Run(ctx, src, dst, dstDir, migrate.Options{CheckpointRecords: cfg.every, Verify: cfg.verify, Samples: cfg.samples, LeafIndex: cfg.leafIndex, PreloadBytes: cfg.preload, Method: cfg.method, Progress: cpu.wrap(p.show)})
	p.end()
	if err != nil {
		dst.Close()
		return err
	}
	if err := migrate.Finish(dst, dstDir); err != nil {
		return err
	}
	if res.Resumed {
		fmt.Println("resumed an interrupted migration")
	}
	rate := float64(res.Records) / max(res.Copy.Seconds(), 1e-9)
	fmt.Printf("copied %d vertices (%.1f MiB written by this run) in %v (%v of CPU): %.0f vertices/s; verified in %v (%d proofs)\n",
		res.Records, float64(res.Bytes)/(1<<20), res.Copy.Round(1e6), cpu.used.Round(1e6), rate, res.Verify.Round(1e6), res.Proofs)
	if res.ReadAhead > 0 {
		fmt.Printf("read ahead: %d source records read by worker goroutines ahead of the copy's walk (%d scanned sequentially, sub-trie by sub-trie)\n", res.ReadAhead, res.Scanned)
	}
	if res.SourceScanned {
		fmt.Println("scanned: the source copied by one sequential scan of its IDs (laid out by the builder)")
	}
	if res.Rebuilt {
		fmt.Println("rebuilt: the target built from the source's leaf index, every key computed, its root checked against the source's")
	}
	if res.Preloaded > 0 {
		fmt.Printf("preloaded: the source's %d records read into memory by sequential scans before the copy's walk\n", res.Preloaded)
	}
	fmt.Printf("verified: target root %v equals the source's\n", res.Root)
	if cfg.leafIndex {
		how := "built from the trie"
		if res.LeafCopied {
			how = "copied from the source"
		}
		fmt.Printf("leaf index: %d entries %s in %v\n", res.LeafEntries, how, res.LeafIndex.Round(1e6))
	}
	if res.Compact > 0 {
		fmt.Printf("compacted: the target's files put in their final shape in %v, beside the verification\n", res.Compact.Round(1e6))
	}
	if !cfg.replace {
		fmt.Printf("done: point your client at %s (or rerun with -replace)\n", dstDir)
		return nil
	}
	if err := src.Close(); err != nil {
		return err
	}
	if err := os.Rename(srcDir, backup); err != nil {
		return err
	}
	if err := os.Rename(dstDir, srcDir); err != nil {
		return fmt.Errorf("%w (the source is at %s, the migrated copy at %s)", err, backup, dstDir)
	}
	fmt.Printf("replaced: %s is now format %v; the old database is at %s\n", srcDir, cfg.to, backup)
	return nil
}

// targetDir is the migration's target directory: DST, or SRC.<format>.
func targetDir(srcDir string, cfg *config) string {
	if cfg.dst != "" {
		return filepath.Clean(cfg.dst)
	}
	return srcDir + "." + cfg.to.String()
}

// finishReplace completes a -replace stopped between its two renames: SRC
// missing, its backup SRC.<format>.bak present, and the target finished (no
// checkpoint). It moves the target to SRC and reports whether it did.
func finishReplace(srcDir string, cfg *config) (bool, error) {
	if _, err := os.Stat(srcDir); !os.IsNotExist(err) {
		return false, nil
	}
	dstDir := targetDir(srcDir, cfg)
	if _, err := os.Stat(dstDir); err != nil {
		return false, nil
	}
	if _, err := os.Stat(migrate.Checkpoint(dstDir)); err == nil {
		return false, nil // an unfinished migration: the source must be there
	}
	for _, f := range []vertex.Format{vertex.FormatV1, vertex.FormatV2} {
		backup := srcDir + "." + f.String() + ".bak"
		if _, err := os.Stat(backup); err != nil {
			continue
		}
		if err := os.Rename(dstDir, srcDir); err != nil {
			return false, fmt.Errorf("finishing an interrupted -replace: %w (the old database is at %s, the migrated copy at %s)", err, backup, dstDir)
		}
		fmt.Printf("replaced: %s is now the migrated copy (a -replace stopped between its renames); the old database is at %s\n", srcDir, backup)
		return true, nil
	}
	return false, nil
}

// ErrJournalPending is returned, before anything is written, for a source
// whose frame journal holds blocks above its persisted state: the migration
// copies the persisted state only, and the client would reopen the target
// without them.
var ErrJournalPending = errors.New("the source's frame journal holds blocks not yet persisted")

// checkJournal refuses a source whose journal (in its RocksDB directory,
// where rocks.Store keeps it) holds frames above its persisted state.
func checkJournal(src *trie.DB, dir string) error {
	blocks, err := src.PendingJournal(dir)
	if err != nil {
		return fmt.Errorf("source %s: %w", dir, err)
	}
	if len(blocks) == 0 {
		return nil
	}
	return fmt.Errorf("source %s: %w: %d journalled frames (blocks %d to %d) above the persisted block %d; open the database with your client and persist them (or remove %s to drop them), then run trie-migrate again",
		dir, ErrJournalPending, len(blocks), slices.Min(blocks), slices.Max(blocks), src.Block(), filepath.Join(dir, trie.JournalFile))
}

// ErrNotDatabase is returned for a source that is not a hexstate database.
var ErrNotDatabase = errors.New("not a hexstate database")

// openSource opens the database in dir read-only, in whatever format it has.
// A missing or empty directory, or a store without an admin record, is
// ErrNotDatabase; nothing is written either way.
func openSource(dir string, cacheMiB int) (*trie.DB, vertex.Format, error) {
	store, err := rocks.Open(dir, &rocks.Options{ReadOnly: true, BlockCacheBytes: uint64(cacheMiB) << 20})
	if err != nil {
		if errors.Is(err, rocks.ErrNoDatabase) {
			err = fmt.Errorf("%w: %w", ErrNotDatabase, err)
		}
		return nil, 0, fmt.Errorf("source %s: %w", dir, err)
	}
	if a, err := store.Admin(); err != nil || a == nil {
		store.Close()
		if err == nil {
			err = fmt.Errorf("%w (a store without an admin record)", ErrNotDatabase)
		}
		return nil, 0, fmt.Errorf("source %s: %w", dir, err)
	}
	f := vertex.Latest
	db, err := trie.Open(store, &trie.Options{Format: f})
	var fe *trie.FormatError
	if errors.As(err, &fe) && fe.Found.Valid() {
		f = fe.Found
		db, err = trie.Open(store, &trie.Options{Format: f})
	}
	if err != nil {
		store.Close()
		return nil, 0, fmt.Errorf("source %s: %w", dir, err)
	}
	return db, f, nil
}

// checkTarget refuses a target directory that holds something other than a
// hexstate store (RocksDB refuses it too, but only once asked to create one)
// and reports whether it is new (missing or empty) rather than an interrupted
// migration's.
func checkTarget(dir string) (fresh bool, err error) {
	fi, err := os.Stat(dir)
	if os.IsNotExist(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("target %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return false, fmt.Errorf("target %s is not a directory", dir)
	}
	if _, err := os.Stat(migrate.Checkpoint(dir)); err == nil {
		return false, nil // an interrupted migration
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, fmt.Errorf("target %s: %w", dir, err)
	}
	if len(entries) > 0 {
		return false, fmt.Errorf("target %s: %w (and no migration checkpoint): choose a new directory", dir, migrate.ErrTargetNotEmpty)
	}
	return true, nil
}

// preloadBytes is trie.CopyOptions.PreloadBytes for -preload MiB (0 and
// below: never).
func preloadBytes(mib int) int {
	if mib <= 0 {
		return -1
	}
	return mib << 20
}

// openTarget opens (creating) the target store for writing in format cfg.to.
func openTarget(dir string, cfg *config) (*trie.DB, error) {
	store, err := rocks.Open(dir, &rocks.Options{Sync: !cfg.noSync, BlockCacheBytes: 32 << 20, FullLoadCompression: cfg.fullZstd})
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", dir, err)
	}
	db, err := trie.Open(store, &trie.Options{Format: cfg.to, Records: cfg.records})
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("target %s: %w", dir, err)
	}
	return db, nil
}
