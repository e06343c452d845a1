package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
)

// blockRecord is one block of one implementation in the results file (JSON
// lines), enough to chart a run without rerunning it.
type blockRecord struct {
	Kind      string            `json:"kind"` // "block"
	Label     string            `json:"label"`
	Impl      string            `json:"impl"`
	Accounts  int               `json:"accounts"`
	Slots     int               `json:"slots"`
	Cadence   int               `json:"persist_every"`
	Block     uint64            `json:"block"`
	ApplyMs   float64           `json:"apply_ms"`
	RootMs    float64           `json:"root_ms"`
	PersistMs float64           `json:"persist_ms"`
	TotalMs   float64           `json:"total_ms"`
	Stats     map[string]uint64 `json:"stats,omitempty"`
}

// runRecord summarises one implementation's part of a run.
type runRecord struct {
	Kind       string  `json:"kind"` // "run"
	Label      string  `json:"label"`
	Impl       string  `json:"impl"`
	Accounts   int     `json:"accounts"`
	Slots      int     `json:"slots"`
	Cadence    int     `json:"persist_every"`
	FirstBlock uint64  `json:"first_block"`
	Blocks     int     `json:"blocks"`
	BuildSec   float64 `json:"build_s,omitempty"` // 0 when the store was reused
	StoreBytes uint64  `json:"store_bytes"`
	// VertexSSTBytes is hexstate's vertex column family's SST bytes (0 for
	// go-ethereum).
	VertexSSTBytes uint64  `json:"vertex_sst_bytes,omitempty"`
	PeakRSS        uint64  `json:"peak_rss_bytes"` // VmHWM of this implementation's part
	MeanMs         float64 `json:"mean_ms"`
	P50Ms          float64 `json:"p50_ms"`
	P99Ms          float64 `json:"p99_ms"`
}

// resultsWriter appends records to a JSON-lines file.
type resultsWriter struct {
	f *os.File
	w *bufio.Writer
}

func openResults(path string) (*resultsWriter, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	return &resultsWriter{f: f, w: bufio.NewWriter(f)}, nil
}

func (r *resultsWriter) write(rec any) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if _, err := r.w.Write(b); err != nil {
		return err
	}
	return r.w.Flush() // a line per record on disk, even if the run dies later
}

func (r *resultsWriter) Close() error {
	err := r.w.Flush()
	if e := r.f.Close(); err == nil {
		err = e
	}
	return err
}
