// Command trie-migrate rewrites a hexstate database into another format version
// (v1 → v2 by default) without a resync. It copies the state into a new
// directory, persisting and checkpointing in chunks (an interrupted run resumes
// when started again with the same arguments), verifies that the new state root
// equals the old one, and with -replace swaps the directories, keeping the old
// one as a backup.
//
//	trie-migrate [-to v2] [-chunk 50000] [-replace] SRC [DST]
//
// DST defaults to SRC.<format>. Stop it with Ctrl-C at any time.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/hexstate/hexstate/cmd/internal/dbopen"
	"github.com/hexstate/hexstate/migrate"
	"github.com/hexstate/hexstate/rocks"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

func main() {
	to := flag.String("to", "v2", "target format: v1 or v2")
	chunk := flag.Int("chunk", 50_000, "accounts per persisted chunk (and checkpoint)")
	replace := flag.Bool("replace", false, "after a verified migration, move SRC to SRC.<old format>.bak and DST to SRC")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: trie-migrate [flags] SRC [DST]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() < 1 || flag.NArg() > 2 {
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *to, *chunk, *replace, flag.Arg(0), flag.Arg(1)); err != nil {
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

func run(ctx context.Context, toName string, chunk int, replace bool, srcDir, dstDir string) error {
	// "db/" must name db itself: otherwise the default target would be db/.v2,
	// inside the source, and -replace could not move it.
	srcDir = filepath.Clean(srcDir)
	if dstDir != "" {
		dstDir = filepath.Clean(dstDir)
	}
	to, err := parseFormat(toName)
	if err != nil {
		return err
	}
	if _, err := os.Stat(srcDir); err != nil {
		return fmt.Errorf("source: %w", err)
	}
	src, from, err := openAny(srcDir)
	if err != nil {
		return fmt.Errorf("source %s: %w", srcDir, err)
	}
	defer src.Close()
	if from == to {
		return fmt.Errorf("source %s is already in format %v", srcDir, to)
	}
	if dstDir == "" {
		dstDir = srcDir + "." + to.String()
	}
	dst, err := dbopen.Open(dstDir, to)
	if err != nil {
		return fmt.Errorf("target %s: %w", dstDir, err)
	}
	root, _ := src.StateRoot()
	fmt.Printf("migrating %s (format %v, block %d, root %v)\n       to %s (format %v)\n", srcDir, from, src.Block(), root, dstDir, to)
	last := time.Time{}
	got, err := migrate.Run(ctx, src, dst, dstDir, migrate.Options{ChunkAccounts: chunk, Progress: func(p migrate.Progress) {
		if time.Since(last) < 2*time.Second && p.Fraction < 1 {
			return
		}
		last = time.Now()
		eta := "?"
		if p.Fraction > 0 {
			eta = (time.Duration(float64(p.Elapsed)/p.Fraction) - p.Elapsed).Round(time.Second).String()
		}
		fmt.Printf("  %5.1f%%  %d accounts  %d slots  %v elapsed  ETA %s\n", 100*p.Fraction, p.Accounts, p.Slots, p.Elapsed.Round(time.Second), eta)
	}})
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	fmt.Printf("verified: target root %v equals the source's\n", got)
	if !replace {
		fmt.Printf("done: point your client at %s (or rerun with -replace)\n", dstDir)
		return nil
	}
	if err := src.Close(); err != nil {
		return err
	}
	backup := srcDir + "." + from.String() + ".bak"
	if err := os.Rename(srcDir, backup); err != nil {
		return err
	}
	if err := os.Rename(dstDir, srcDir); err != nil {
		return fmt.Errorf("%w (the source is at %s, the migrated copy at %s)", err, backup, dstDir)
	}
	fmt.Printf("replaced: %s is now format %v; the old database is at %s\n", srcDir, to, backup)
	return nil
}

// openAny opens the database in dir in whatever format it has.
func openAny(dir string) (*trie.DB, vertex.Format, error) {
	db, err := dbopen.Open(dir, vertex.Latest)
	var fe *trie.FormatError
	if errors.As(err, &fe) && fe.Found.Valid() {
		db, err = dbopen.Open(dir, fe.Found)
		return db, fe.Found, err
	}
	return db, vertex.Latest, err
}
