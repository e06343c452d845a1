package trie_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/hexstate/hexstate/internal/trietest"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// TestCopyScanOutOfOrder copies format-v1 sources that pass for laid out by
// the builder but are not (one grown in key order by a single frame; one
// built, then given new accounts by a frame) into format v2: CopyScan
// refuses them with ErrCopy, leaving the target empty, and CopyAuto, whose
// scan finds them out of order, copies them by the walk from the start, to
// the builder's records all the same.
func TestCopyScanOutOfOrder(t *testing.T) {
	accts := trietest.StateAccounts(3000, 31)
	extra := trietest.StateAccounts(40, 32)
	for _, how := range []string{"one frame in key order", "built, then grown"} {
		t.Run(how, func(t *testing.T) {
			src := newMem(t, vertex.FormatV1, true)
			final := accts
			if how == "one frame in key order" {
				fr := src.Begin()
				writeAccounts(t, fr, accts)
				trietest.Must(t, src.Persist(fr, 1), "Persist")
			} else {
				trietest.LoadState(t, src, accts, 1)
				fr := src.Begin()
				writeAccounts(t, fr, extra)
				trietest.Must(t, src.Persist(fr, 2), "Persist")
				final = slices.Concat(accts, extra)
				slices.SortFunc(final, func(a, b trie.AccountLeaf) int { return trietest.CmpHash(a.AddrHash, b.AddrHash) })
			}
			trietest.Must(t, src.Flush(), "Flush")
			if !trie.SourceLaidOut(src) {
				t.Skip("the source is not taken as laid out: the scan is not tried")
			}
			_, want := loaded(t, vertex.FormatV2, final, true)

			b := trie.NewMemoryBackend()
			dst, err := trie.Open(b, &trie.Options{Format: vertex.FormatV2, Records: vertex.KeysOnce})
			trietest.Must(t, err, "Open")
			if _, err := dst.CopyFrom(context.Background(), src, trie.CopyOptions{Block: 9, Method: trie.CopyScan}); !errors.Is(err, trie.ErrCopy) {
				t.Fatalf("CopyScan of a source out of order: %v, want ErrCopy", err)
			}
			if r := trietest.DBRoot(t, dst); r != trietest.DBRoot(t, newMem(t, vertex.FormatV2, true)) {
				t.Fatalf("the refused scan left the target at root %v", r)
			}

			b = trie.NewMemoryBackend()
			dst, err = trie.Open(b, &trie.Options{Format: vertex.FormatV2, Records: vertex.KeysOnce})
			trietest.Must(t, err, "Open")
			var p trie.CopyProgress
			_, err = dst.CopyFrom(context.Background(), src, trie.CopyOptions{Block: 9, Committed: func(q trie.CopyProgress) { p = q }})
			trietest.Must(t, err, "CopyFrom")
			trietest.SameRecords(t, b, want)
			if p.SourceScanned || p.Records != uint64(len(trietest.Records(t, want))) {
				t.Fatalf("scanned %v, %d records", p.SourceScanned, p.Records)
			}

			// The fall back checkpoints the walk's start; a stop at the
			// walk's next checkpoint resumes the walk, not the scan.
			b = trie.NewMemoryBackend()
			dst, err = trie.Open(b, &trie.Options{Format: vertex.FormatV2, Records: vertex.KeysOnce})
			trietest.Must(t, err, "Open")
			ctx, cancel := context.WithCancel(context.Background())
			var state []byte
			fellBack := false
			_, err = dst.CopyFrom(ctx, src, trie.CopyOptions{Block: 9, CheckpointRecords: 200,
				Checkpoint: func(s []byte, q trie.CopyProgress) error {
					switch {
					case state != nil:
					case fellBack:
						state = s
						cancel()
					case q.Records == 0 && !q.SourceScanned:
						fellBack = true
					}
					return nil
				}})
			cancel()
			if state == nil || !errors.Is(err, context.Canceled) {
				t.Fatalf("no checkpoint after the fall back (fell back %v): %v", fellBack, err)
			}
			dst, err = trie.Open(b, &trie.Options{Format: vertex.FormatV2, Records: vertex.KeysOnce})
			trietest.Must(t, err, "reopen")
			_, err = dst.CopyFrom(context.Background(), src, trie.CopyOptions{Block: 9, Resume: state, Committed: func(q trie.CopyProgress) { p = q }})
			trietest.Must(t, err, "resume after the fall back")
			trietest.SameRecords(t, b, want)
			if p.SourceScanned {
				t.Fatal("the resumed copy scanned")
			}
		})
	}
}

// writeAccounts writes accts, with their storage, into fr.
func writeAccounts(t *testing.T, fr *trie.Frame, accts []trie.AccountLeaf) {
	t.Helper()
	for i := range accts {
		a := &accts[i]
		trietest.Must(t, fr.UpdateAccount(a.AddrHash, a.Account), "UpdateAccount")
		for j := range a.Storage {
			trietest.Must(t, fr.UpdateStorage(a.AddrHash, a.Storage[j].Hash, &a.Storage[j].Value), "UpdateStorage")
		}
	}
}
