package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunSummary: the summary reads only the records after the offset, puts
// an implementation's parts together (geth's two continue each other's
// block numbers, as a palindrome's do), and compares a hexstate layout
// with a go-ethereum mode over the blocks both ran.
func TestRunSummary(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.jsonl")
	w, err := openResults(path)
	if err != nil {
		t.Fatal(err)
	}
	block := func(impl string, n uint64, ms float64) {
		t.Helper()
		if err := w.write(blockRecord{Kind: "block", Label: "x", Impl: impl, Block: n, TotalMs: ms}); err != nil {
			t.Fatal(err)
		}
	}
	block("hexstate-v2", 1, 5000) // an earlier run's
	if err := w.write(runRecord{Kind: "run", Impl: "hexstate-v2"}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	// In run order: hexstate-v2 in two parts; geth in two, the second after
	// geth-state's, and killed before block 15.
	for _, p := range []struct {
		impl        string
		first, last uint64
		ms          float64
	}{
		{"hexstate-v2", 11, 12, 100}, {"geth", 11, 12, 400}, {"geth-state", 11, 14, 300},
		{"geth", 13, 14, 300}, {"hexstate-v2", 15, 16, 100},
	} {
		for n := p.first; n <= p.last; n++ {
			block(p.impl, n, p.ms)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := printRunSummary(&out, path, fi.Size()); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(strings.Fields(out.String()), " ") // the table's columns are padded
	for _, want := range []string{
		"hexstate-v2 4 2 11 16 100.00 100.00 100.00",
		"geth 4 2 11 14 350.00 300.00 400.00",
		"hexstate-v2 / geth: 0.25 (block means over the 2 blocks both ran: 100.00 against 400.00 ms)",
		"hexstate-v2 / geth-state: 0.33 (block means over the 2 blocks both ran: 100.00 against 300.00 ms)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "5000") {
		t.Errorf("summary counts a record from before the offset:\n%s", got)
	}
}
