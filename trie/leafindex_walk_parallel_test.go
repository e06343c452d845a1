package trie

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/hexstate/hexstate/vertex"
	"github.com/holiman/uint256"
)

// TestLeafWalkParallelOrder walks a state's leaf entries serially and on
// several goroutines cut one to three branch levels down: the same entries
// in the same (ascending) order. Stopping early and cancelling return
// without waiting for the rest of the walk.
func TestLeafWalkParallelOrder(t *testing.T) {
	for _, f := range []vertex.Format{vertex.FormatV1, vertex.FormatV2} {
		t.Run(f.String(), func(t *testing.T) {
			db := fiOpen(t, f, 0)
			fr := db.Begin()
			for i := range 6000 {
				fiMust(t, fr.UpdateAccount(fiAddr(i), fiAcc(uint64(i+1))))
				if i%7 == 0 {
					for s := range 1 + i%13 {
						fiMust(t, fr.UpdateStorage(fiAddr(i), fiSlot(s), uint256.NewInt(uint64(s+1))))
					}
				}
			}
			fiMust(t, db.Persist(fr, 1))
			fiMust(t, db.Flush())
			ctx := context.Background()
			var want []string
			fiMust(t, db.eachLeafEntry(ctx, 1, func(k, v []byte) error {
				want = append(want, fmt.Sprintf("%x=%x", k, v))
				return nil
			}))
			if len(want) < 6000 {
				t.Fatalf("serial walk: %d entries", len(want))
			}
			root, err := db.storedVertex(vertex.RootID)
			fiMust(t, err)
			for _, levels := range []int{1, 2, 3} {
				for _, workers := range []int{2, 5} {
					var got []string
					fiMust(t, db.eachLeafEntryParallel(ctx, root, workers, levels, func(k, v []byte) error {
						got = append(got, fmt.Sprintf("%x=%x", k, v))
						return nil
					}))
					if len(got) != len(want) {
						t.Fatalf("levels %d, %d workers: %d entries, want %d", levels, workers, len(got), len(want))
					}
					for i := range got {
						if got[i] != want[i] {
							t.Fatalf("levels %d, %d workers: entry %d is %s, want %s", levels, workers, i, got[i], want[i])
						}
					}
				}
			}
			n := 0
			stop := errors.New("stop")
			if err := db.eachLeafEntryParallel(ctx, root, 2, 2, func(k, v []byte) error {
				if n++; n == 1500 {
					return stop
				}
				return nil
			}); err != stop || n != 1500 {
				t.Fatalf("stopped walk: %v after %d entries, want the callback's error after 1500", err, n)
			}
			cctx, cancel := context.WithCancel(ctx)
			var last []byte
			err = db.eachLeafEntryParallel(cctx, root, 2, 2, func(k, v []byte) error {
				if last != nil && bytes.Compare(last, k) >= 0 {
					t.Errorf("entries out of order: %x after %x", k, last)
				}
				last = bytes.Clone(k)
				cancel()
				return nil
			})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled walk: %v, want context.Canceled", err)
			}
		})
	}
}
