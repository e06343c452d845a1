// Command chart draws PNG charts from trie-bench's scale results (the JSON
// lines that `trie-bench -mode scale` appends to <dir>/results.jsonl), so
// that charts never need a rerun:
//
//	go run ./chart -results a.jsonl,b.jsonl -label scale-4m -out ../../docs
//
// It writes scale-blocks-<label>.png (per-block time by block, one line per
// implementation) and scale-size.png (mean per-block time against the number
// of accounts, over every label's run persisting every block).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "chart:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("chart", flag.ContinueOnError)
	results := fs.String("results", "", "comma-separated results files (JSON lines from trie-bench -mode scale)")
	labels := fs.String("label", "", "comma-separated run labels to draw per-block charts for (default: every label)")
	out := fs.String("out", ".", "directory for the PNG files")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *results == "" {
		return fmt.Errorf("no -results")
	}
	var recs []record
	for _, p := range strings.Split(*results, ",") {
		r, err := readResults(p)
		if err != nil {
			return err
		}
		recs = append(recs, r...)
	}
	want := map[string]bool{}
	for _, l := range strings.Split(*labels, ",") {
		if l != "" {
			want[l] = true
		}
	}
	seen := map[string]bool{}
	for _, r := range recs {
		if r.Kind != "block" || seen[r.Label] || (len(want) > 0 && !want[r.Label]) {
			continue
		}
		seen[r.Label] = true
		path := filepath.Join(*out, "scale-blocks-"+r.Label+".png")
		if err := blockChart(recs, r.Label, path); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		fmt.Println("wrote", path)
	}
	path := filepath.Join(*out, "scale-size.png")
	if err := sizeChart(recs, path); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	fmt.Println("wrote", path)
	return nil
}
