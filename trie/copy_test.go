package trie_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/hexstate/hexstate/internal/trietest"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

func other(f vertex.Format) vertex.Format {
	if f == vertex.FormatV1 {
		return vertex.FormatV2
	}
	return vertex.FormatV1
}

func newMem(t *testing.T, f vertex.Format, noChild bool) *trie.DB {
	t.Helper()
	db, err := trie.Open(trie.NewMemoryBackend(), &trie.Options{Format: f, Records: trietest.RecordsOf(noChild)})
	trietest.Must(t, err, "Open")
	return db
}

// loaded is a database of format f holding accts, built by the StateLoader.
func loaded(t *testing.T, f vertex.Format, accts []trie.AccountLeaf, noChild bool) (*trie.DB, trie.Backend) {
	t.Helper()
	b := trie.NewMemoryBackend()
	db, err := trie.Open(b, &trie.Options{Format: f, Records: trietest.RecordsOf(noChild)})
	trietest.Must(t, err, "Open")
	trietest.LoadState(t, db, accts, 9)
	return db, b
}

// TestCopyIsTheBuildersStore copies builder-made stores into the other
// format and finds the records the builder makes in that format.
func TestCopyIsTheBuildersStore(t *testing.T) {
	accts := trietest.StateAccounts(3000, 1)
	for _, f := range trietest.Formats {
		t.Run(f.String(), func(t *testing.T) {
			src, _ := loaded(t, f, accts, false)
			_, want := loaded(t, other(f), accts, false)
			b := trie.NewMemoryBackend()
			dst, err := trie.Open(b, &trie.Options{Format: other(f), Records: vertex.ChildKeyCopies})
			trietest.Must(t, err, "Open")
			root, err := dst.CopyFrom(context.Background(), src, trie.CopyOptions{Block: src.Block()})
			trietest.Must(t, err, "CopyFrom")
			if r := trietest.DBRoot(t, src); r != root {
				t.Fatalf("root %v, want %v", root, r)
			}
			trietest.SameRecords(t, b, want)
		})
	}
}

// TestCopyGrownStore copies stores grown by random inserts (scattered v1 IDs,
// reused v2 slots) and stores without children's keys (copied into stores
// with them, so leaves are hashed): the result is the builder's store.
func TestCopyGrownStore(t *testing.T) {
	accts := trietest.StateAccounts(2000, 2)
	for _, f := range trietest.Formats {
		for _, noChild := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/nochildkeys=%v", f, noChild), func(t *testing.T) {
				src := newMem(t, f, noChild)
				trietest.GrowState(t, src, accts, 300, 3)
				for _, to := range trietest.Formats {
					_, want := loaded(t, to, accts, false)
					b := trie.NewMemoryBackend()
					dst, err := trie.Open(b, &trie.Options{Format: to, Records: vertex.ChildKeyCopies})
					trietest.Must(t, err, "Open")
					_, err = dst.CopyFrom(context.Background(), src, trie.CopyOptions{Block: 9})
					trietest.Must(t, err, "CopyFrom to %v", to)
					trietest.SameRecords(t, b, want)
				}
			})
		}
	}
}

// TestCopyComputesFewKeys copies a store written with each key once into
// the other layout, once with each key once (the copy computes the keys of
// short branches only, whose records never store them: a few dozen here,
// where hashing every leaf would be thousands) and once with children's keys
// (every child key the source lacks is computed), and checks the count
// CopyProgress reports at the commit.
func TestCopyComputesFewKeys(t *testing.T) {
	accts := trietest.StateAccounts(3000, 4)
	for _, f := range trietest.Formats {
		src, _ := loaded(t, f, accts, true)
		for _, to := range []vertex.Records{vertex.KeysOnce, vertex.ChildKeyCopies} {
			dst, err := trie.Open(trie.NewMemoryBackend(), &trie.Options{Format: other(f), Records: to})
			trietest.Must(t, err, "Open")
			var final trie.CopyProgress
			_, err = dst.CopyFrom(context.Background(), src, trie.CopyOptions{Block: src.Block(),
				Committed: func(p trie.CopyProgress) { final = p }})
			trietest.Must(t, err, "CopyFrom %v into %v, %v", f, other(f), to)
			few := final.KeysComputed < final.Records/50
			if few != (to == vertex.KeysOnce) {
				t.Errorf("%v into %v, %v: %d keys computed for %d records", f, other(f), to, final.KeysComputed, final.Records)
			}
		}
	}
}

// TestCopyResumes stops a copy at every checkpoint in turn and resumes it
// from there in a reopened target: the records are those of one run.
func TestCopyResumes(t *testing.T) {
	accts := trietest.StateAccounts(3000, 4)
	for _, f := range trietest.Formats {
		t.Run(f.String(), func(t *testing.T) {
			src, _ := loaded(t, other(f), accts, false)
			_, want := loaded(t, f, accts, false)
			for stop := 1; ; stop++ {
				b := trie.NewMemoryBackend()
				dst, err := trie.Open(b, &trie.Options{Format: f, Records: vertex.ChildKeyCopies})
				trietest.Must(t, err, "Open")
				ctx, cancel := context.WithCancel(context.Background())
				var state []byte
				n := 0
				_, err = dst.CopyFrom(ctx, src, trie.CopyOptions{Block: 9, CheckpointRecords: 300,
					Checkpoint: func(s []byte, _ trie.CopyProgress) error {
						if n++; n == stop {
							state = s
							cancel()
						}
						return nil
					}})
				cancel()
				if state == nil || err == nil { // no checkpoint left, or none after it to stop at
					trietest.Must(t, err, "CopyFrom")
					trietest.SameRecords(t, b, want)
					if stop < 4 {
						t.Fatalf("only %d checkpoints", stop-1)
					}
					return
				}
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("stop %d: %v, want context.Canceled", stop, err)
				}
				dst, err = trie.Open(b, &trie.Options{Format: f, Records: vertex.ChildKeyCopies})
				trietest.Must(t, err, "reopen")
				_, err = dst.CopyFrom(context.Background(), src, trie.CopyOptions{Block: 9, Resume: state})
				trietest.Must(t, err, "resume at %d", stop)
				trietest.SameRecords(t, b, want)
			}
		})
	}
}

// TestCopyRefuses checks a copy into a non-empty target or with a bad resume
// state writes nothing.
func TestCopyRefuses(t *testing.T) {
	accts := trietest.StateAccounts(100, 5)
	src, _ := loaded(t, vertex.FormatV1, accts, false)
	full, _ := loaded(t, vertex.FormatV2, accts, false)
	if _, err := full.CopyFrom(context.Background(), src, trie.CopyOptions{Block: 10}); !errors.Is(err, trie.ErrCopy) {
		t.Fatalf("copy into a full target: %v", err)
	}
	dst := newMem(t, vertex.FormatV2, false)
	if _, err := dst.CopyFrom(context.Background(), src, trie.CopyOptions{Resume: []byte("junk")}); !errors.Is(err, trie.ErrCopy) {
		t.Fatalf("junk resume state: %v", err)
	}
	if _, err := dst.CopyFrom(context.Background(), dst, trie.CopyOptions{}); !errors.Is(err, trie.ErrCopy) {
		t.Fatalf("copy into itself: %v", err)
	}
}
