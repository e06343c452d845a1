package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hexstate/hexstate/hashkey"
)

// storeState is what a kept store holds: its last persisted block and root,
// written beside the store after the build and after every run.
type storeState struct {
	Block uint64       `json:"block"`
	Root  hashkey.Hash `json:"root"`
}

func statePath(dir, name string) string { return filepath.Join(dir, name+".state.json") }

// readStoreState returns the state of store name, or ok false if there is none.
func readStoreState(dir, name string) (st storeState, ok bool, err error) {
	b, err := os.ReadFile(statePath(dir, name))
	if os.IsNotExist(err) {
		return st, false, nil
	}
	if err != nil {
		return st, false, err
	}
	return st, true, json.Unmarshal(b, &st)
}

func writeStoreState(dir, name string, st storeState) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	tmp := statePath(dir, name) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, statePath(dir, name))
}

// rootLog holds the state root and read digest of every block any
// implementation ran on this workload (a file in dir, so that runs in
// separate processes are checked against each other): the first to reach a
// block records it, the others must agree.
type rootLog struct {
	path string
	seen map[uint64]string
	f    *os.File
}

func openRootLog(dir string, s scaleShape, c scaleBlockCfg) (*rootLog, error) {
	path := filepath.Join(dir, fmt.Sprintf("roots-seed%d-n%d-w%d-%d-r%d-%d.txt", s.seed, s.accounts, c.accWrites, c.slotWrites, c.accReads, c.slotReads))
	l := &rootLog{path: path, seen: map[uint64]string{}}
	if f, err := os.Open(path); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var n uint64
			var rest string
			if k, _ := fmt.Sscanf(sc.Text(), "%d %s", &n, &rest); k == 2 {
				l.seen[n] = strings.TrimSpace(sc.Text()[len(fmt.Sprint(n)):])
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("roots: %w", err)
		}
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("roots: %w", err)
	}
	l.f = f
	return l, nil
}

// check records or compares block n's root and read digest.
func (l *rootLog) check(impl string, n uint64, root hashkey.Hash, d readDigest) error {
	got := fmt.Sprintf("%v %016x", root, uint64(d))
	if want, ok := l.seen[n]; ok {
		if want != got {
			return fmt.Errorf("STATE MISMATCH at block %d: %s has root+read digest %s, %s recorded %s", n, impl, got, l.path, want)
		}
		return nil
	}
	l.seen[n] = got
	_, err := fmt.Fprintf(l.f, "%d %s\n", n, got)
	return err
}

func (l *rootLog) Close() error { return l.f.Close() }
