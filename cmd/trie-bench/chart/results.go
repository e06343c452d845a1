package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
)

// record is the union of trie-bench's block and run records (field "kind").
type record struct {
	Kind     string  `json:"kind"`
	Label    string  `json:"label"`
	Impl     string  `json:"impl"`
	Accounts int     `json:"accounts"`
	Cadence  int     `json:"persist_every"`
	Block    uint64  `json:"block"`
	TotalMs  float64 `json:"total_ms"`
	MeanMs   float64 `json:"mean_ms"`
	P50Ms    float64 `json:"p50_ms"`
	P99Ms    float64 `json:"p99_ms"`
}

// readResults reads a JSON-lines results file.
func readResults(path string) ([]record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		out = append(out, r)
	}
	return out, sc.Err()
}

// implOrder is the order (and legend) of the implementations in the charts.
var implOrder = []string{"hexstate-v2", "hexstate-v1", "geth", "geth-state"}

var implLegend = map[string]string{
	"hexstate-v2": "hexstate-v2",
	"hexstate-v1": "hexstate-v1",
	"geth":        "go-ethereum trie-only",
	"geth-state":  "go-ethereum StateDB (flat state)",
}
