package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/hexstate/hexstate/internal/trietest"
	"github.com/hexstate/hexstate/rocks"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// rocksStore opens the test stores on RocksDB, small.
var rocksStore = trietest.Opener{Name: "rocksdb", Open: func(tb testing.TB, dir string) trie.Backend {
	tb.Helper()
	s, err := rocks.Open(dir, &rocks.Options{BlockCacheBytes: 8 << 20, WriteBufferBytes: 4 << 20, BackgroundJobs: 2})
	if err != nil {
		tb.Fatalf("rocks.Open(%s): %v", dir, err)
	}
	return s
}}

// newStore writes a state into a new RocksDB store of format f and record
// variant recs (0: the default) and closes it.
func newStore(t *testing.T, f vertex.Format, recs vertex.Records) *trietest.Store {
	s := trietest.NewStore(t, rocksStore)
	s.Records = recs
	db := s.Open(f)
	trietest.CheckedState(t, db, 600)
	trietest.Must(t, db.Close(), "Close")
	return s
}

// checkDir runs trie-check on dir and returns its exit status and output.
func checkDir(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out, errs bytes.Buffer
	code := run(context.Background(), args, &out, &errs)
	return code, out.String() + errs.String()
}

// TestTrieCheck runs the command on a fresh store (exit 0) and on copies
// with one record changed (exit 1, the vertex named), in both formats. The
// tampered stores carry children's keys, so that every tampering applies and
// names its vertex (DB.Check's tests cover both record variants).
func TestTrieCheck(t *testing.T) {
	trietest.EachFormat(t, func(t *testing.T, f vertex.Format) {
		s := newStore(t, f, 0)
		code, out := checkDir(t, "-workers", "2", "-records", s.Dir)
		if code != exitOK || !strings.Contains(out, "\nOK\n") || !strings.Contains(out, "0 of them unreachable") {
			t.Fatalf("fresh store: exit %d:\n%s", code, out)
		}
		t.Logf("fresh store:\n%s", out)
		for _, tp := range trietest.Tampers {
			t.Run(strings.ReplaceAll(tp.Name, " ", "_"), func(t *testing.T) {
				s := newStore(t, f, vertex.ChildKeyCopies)
				b := s.Backend()
				id := tp.Apply(t, b)
				trietest.Must(t, b.Close(), "closing the store")
				code, out := checkDir(t, "-workers", "2", "-progress", "0", s.Dir)
				if code != exitViolations || !trietest.NamesVertex(out, id) {
					t.Fatalf("%s of vertex %d: exit %d, want %d and the vertex named:\n%s", tp.Name, id, code, exitViolations, out)
				}
				t.Logf("%s of vertex %d:\n%s", tp.Name, id, out)
			})
		}
	})
}

// TestTrieCheckRootGone: a store whose root record is gone does not open as
// a database; that is a finding (exit 1), not a usage error.
func TestTrieCheckRootGone(t *testing.T) {
	s := newStore(t, vertex.FormatV2, 0)
	b := s.Backend()
	trietest.Must(t, b.Write(&vertex.Batch{Deletes: []vertex.ID{vertex.RootID}}), "deleting the root")
	trietest.Must(t, b.Close(), "closing the store")
	if code, out := checkDir(t, s.Dir); code != exitViolations {
		t.Fatalf("exit %d, want %d:\n%s", code, exitViolations, out)
	}
}

// TestTrieCheckUsage: bad arguments and paths that hold no store exit 2.
func TestTrieCheckUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"-workers", "0", t.TempDir()}, {"a", "b"}, {"-nosuchflag", "x"}, {t.TempDir()}, {t.TempDir() + "/missing"}} {
		if code, out := checkDir(t, args...); code != exitUsage {
			t.Errorf("trie-check %q: exit %d, want %d:\n%s", args, code, exitUsage, out)
		}
	}
}
