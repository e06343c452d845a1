// Command trie-check checks a hexstate database for consistency: it walks the
// whole persisted state (the account trie and every storage trie) on several
// goroutines, recomputes every key from the leaves up, compares every stored
// key and stored child key with it, checks every reference and the allocator
// top, and compares the recomputed root with the one the admin record holds.
// It prints progress every few seconds, then a report with the first
// violations, each naming its vertex ID and nibble path (for a storage trie,
// the account's key too).
//
//	trie-check [-workers N] [-max N] [-records] [-progress 5s] DIR
//
// DIR is a RocksDB store, opened read-only: nothing is written to it. The exit
// status is 0 for a consistent state, 1 when violations were found (or the
// store is too damaged to open as a database), 2 for usage errors and stores
// that cannot be opened at all.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"time"

	"github.com/hexstate/hexstate/trie"
)

// Exit statuses.
const (
	exitOK         = 0
	exitViolations = 1
	exitUsage      = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the command with its arguments (without the program name), writing
// the report to stdout and progress and errors to stderr; it returns the exit
// status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("trie-check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	workers := fs.Int("workers", runtime.GOMAXPROCS(0), "goroutines walking the state")
	max := fs.Int("max", trie.DefaultCheckMax, "violations to report before stopping")
	records := fs.Bool("records", false, "also scan the whole store, count its records and report those no reference reaches (garbage, not a violation)")
	every := fs.Duration("progress", 5*time.Second, "interval of the progress lines (0: none)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: trie-check [flags] DIR\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() != 1 || *workers < 1 || *max < 1 || *every < 0 {
		fs.Usage()
		return exitUsage
	}
	dir := fs.Arg(0)
	db, err := openReadOnly(dir)
	if err != nil {
		fmt.Fprintf(stderr, "trie-check: %s: %v\n", dir, err)
		if damaged(err) {
			fmt.Fprintln(stdout, "FAILED: the store does not open as a consistent database")
			return exitViolations
		}
		return exitUsage
	}
	defer db.Close()
	root, _ := db.StateRoot()
	fmt.Fprintf(stdout, "checking %s: format %v, block %d, root %v, %d workers\n", dir, db.Format(), db.Block(), root, *workers)

	opts := &trie.CheckOptions{Workers: *workers, Max: *max, CountRecords: *records}
	start := time.Now()
	if *every > 0 {
		opts.ProgressEvery = *every
		opts.Progress = func(c trie.CheckCounts) { printProgress(stderr, c, time.Since(start)) }
	}
	rep, err := db.Check(ctx, opts)
	if err != nil {
		fmt.Fprintf(stderr, "trie-check: %s: %v\n", dir, err)
		return exitUsage
	}
	printReport(stdout, rep)
	if !rep.OK() {
		return exitViolations
	}
	return exitOK
}
