package trie_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/hexstate/hexstate/internal/trietest"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// TestCopyLeafIndex copies a store into the other format, then its leaf
// index: the target's index is complete and agrees with its trie (DB.Check
// compares every entry), with as many entries as a build from the trie. A
// source entry that differs from the trie (where the spot check looks), a
// source without an index and a target at another state are refused, and
// the target then has no index.
func TestCopyLeafIndex(t *testing.T) {
	ctx := context.Background()
	accts := trietest.StateAccounts(3000, 3)
	for _, f := range trietest.Formats {
		t.Run(f.String(), func(t *testing.T) {
			src, sb := loaded(t, f, accts, true)
			built, err := src.BuildLeafIndex(ctx)
			trietest.Must(t, err, "BuildLeafIndex")
			copyTo := func() *trie.DB {
				dst := newMem(t, other(f), true)
				_, err := dst.CopyFrom(ctx, src, trie.CopyOptions{Block: src.Block()})
				trietest.Must(t, err, "CopyFrom")
				return dst
			}

			dst := copyTo()
			n, err := dst.CopyLeafIndex(ctx, src)
			trietest.Must(t, err, "CopyLeafIndex")
			if n != built || !dst.HasLeafIndex() {
				t.Fatalf("copied %d entries (index complete: %v), a build from the trie makes %d", n, dst.HasLeafIndex(), built)
			}
			rep, err := dst.Check(ctx, nil)
			trietest.Must(t, err, "Check")
			if !rep.OK() || rep.LeafEntries != built {
				t.Fatalf("check of the copied index: %d entries, violations %v", rep.LeafEntries, rep.Violations)
			}

			// The source's first entry (spot-checked) gets the second's value:
			// a valid leaf, but not the trie's.
			var keys, vals [][]byte
			trietest.Must(t, sb.EachLeaf(nil, func(k, v []byte) error {
				if len(keys) < 2 && len(k) == 32 {
					keys, vals = append(keys, bytes.Clone(k)), append(vals, bytes.Clone(v))
				}
				return nil
			}), "EachLeaf")
			trietest.Must(t, sb.Write(&vertex.Batch{Leaves: []vertex.LeafEntry{{Key: keys[0], Val: vals[1]}}}), "Write")
			dst = copyTo()
			if _, err := dst.CopyLeafIndex(ctx, src); !errors.Is(err, trie.ErrLeafIndexMismatch) || dst.HasLeafIndex() {
				t.Fatalf("copy of an index that differs from the trie: %v (index complete: %v), want ErrLeafIndexMismatch", err, dst.HasLeafIndex())
			}
			trietest.Must(t, sb.Write(&vertex.Batch{Leaves: []vertex.LeafEntry{{Key: keys[0], Val: vals[0]}}}), "Write")

			other := newMem(t, other(f), true)
			if _, err := other.CopyLeafIndex(ctx, src); !errors.Is(err, trie.ErrLeafIndexMismatch) {
				t.Fatalf("copy onto a database at another state: %v, want ErrLeafIndexMismatch", err)
			}
			if _, err := other.CopyLeafIndex(ctx, dst); !errors.Is(err, trie.ErrNoLeafIndex) {
				t.Fatalf("copy from a database without an index: %v, want ErrNoLeafIndex", err)
			}
		})
	}
}
