package main

import (
	"fmt"
	"os"
	"runtime/trace"
	"strings"
)

// blockTrace writes a Go execution trace of a range of blocks (flag -trace
// FILE:FROM-TO), for go tool trace: what a slow block waited for (a
// processor, a lock, the GC) shows there, not in a CPU profile.
type blockTrace struct {
	file     string
	from, to uint64
	f        *os.File
}

// newBlockTrace parses the flag's value; an empty one traces nothing.
func newBlockTrace(spec string) (*blockTrace, error) {
	if spec == "" {
		return &blockTrace{}, nil
	}
	i := strings.LastIndex(spec, ":")
	t := &blockTrace{file: spec[:max(i, 0)]}
	if i < 0 || t.file == "" {
		return nil, fmt.Errorf("-trace %q: want FILE:FROM-TO", spec)
	}
	if _, err := fmt.Sscanf(spec[i+1:], "%d-%d", &t.from, &t.to); err != nil || t.from < 1 || t.to < t.from {
		return nil, fmt.Errorf("-trace %q: want FILE:FROM-TO with 1 <= FROM <= TO", spec)
	}
	return t, nil
}

// at starts the trace before block n = FROM and stops it before TO+1.
func (t *blockTrace) at(n uint64) error {
	switch {
	case t.file == "":
	case n == t.from:
		f, err := os.Create(t.file)
		if err != nil {
			return err
		}
		t.f = f
		if err := trace.Start(f); err != nil {
			return err
		}
	case n == t.to+1:
		t.stop()
	}
	return nil
}

// stop ends the trace if it runs, and keeps only the first one (one file).
func (t *blockTrace) stop() {
	if t.f != nil {
		trace.Stop()
		t.f.Close()
		t.f = nil
	}
	t.file = ""
}
