package main

import (
	"fmt"
	"io"
	"time"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie"
)

// printProgress writes one progress line: what was walked after elapsed.
func printProgress(w io.Writer, c trie.CheckCounts, elapsed time.Duration) {
	fmt.Fprintf(w, "  %6.1fs  %d vertices (%d accounts, %d slots), %.1f MiB read\n",
		elapsed.Seconds(), c.Vertices, c.Accounts, c.Slots, float64(c.Bytes)/(1<<20))
}

// printReport writes the report: counts, time, then OK or the violations.
func printReport(w io.Writer, r *trie.CheckReport) {
	c := r.Counts
	fmt.Fprintf(w, "walked %d vertices (%d branches, %d leaves): %d accounts, %d with storage, %d slots; %.1f MiB of records\n",
		c.Vertices, c.Branches, c.Leaves, c.Accounts, c.StorageTries, c.Slots, float64(c.Bytes)/(1<<20))
	rate := 0.0
	if s := r.Elapsed.Seconds(); s > 0 {
		rate = float64(c.Vertices) / s
	}
	fmt.Fprintf(w, "took %v on %d workers (%.0f vertices/s)\n", r.Elapsed.Round(time.Millisecond), r.Workers, rate)
	root := "not computable (see below)"
	if r.Root != (hashkey.Hash{}) {
		root = r.Root.String()
	}
	fmt.Fprintf(w, "allocator top %d, recomputed root %s\n", r.Top, root)
	if r.Records > 0 {
		fmt.Fprintf(w, "%d records at or below the top, %d of them unreachable\n", r.Records, r.Unreachable)
	}
	if r.OK() {
		fmt.Fprintln(w, "OK")
		return
	}
	more := ""
	if r.Stopped {
		more = " (stopped there: there may be more)"
	}
	fmt.Fprintf(w, "FAILED: %d violations found%s; the first %d:\n", r.Found, more, len(r.Violations))
	for _, v := range r.Violations {
		fmt.Fprintf(w, "  vertex %d at %s: %s\n", v.ID, v.Where, v.Reason)
	}
	if r.Consequent > 0 {
		fmt.Fprintf(w, "%d more key mismatches above those (their ancestors, which hash differently in turn)\n", r.Consequent)
	}
}
