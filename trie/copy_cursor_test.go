package trie_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/hexstate/hexstate/internal/trietest"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// cursorBackend is a memory backend with range cursors (trie.CursorBackend)
// that count themselves.
type cursorBackend struct {
	trie.Backend
	made, open atomic.Int64 // cursors made, open
}

func (b *cursorBackend) NewRangeCursor() (trie.RangeCursor, error) {
	b.made.Add(1)
	b.open.Add(1)
	return &memCursor{b: b}, nil
}

type memCursor struct {
	b      *cursorBackend
	closed bool
}

func (c *memCursor) VertexRange(first vertex.ID, n int, fn func(vertex.ID, []byte) error) error {
	if c.closed {
		return errors.New("cursor closed")
	}
	return c.b.VertexRange(first, n, fn)
}

func (c *memCursor) Close() {
	if !c.closed {
		c.closed = true
		c.b.open.Add(-1)
	}
}

// TestCopyThroughCursors copies sources whose backend has cursors, built and
// grown (scattered v1 IDs), into the other format: the records are the
// builder's, the copy read through cursors and closed them all, also when
// stopped.
func TestCopyThroughCursors(t *testing.T) {
	accts := trietest.StateAccounts(2000, 6)
	for _, f := range trietest.Formats {
		for _, grown := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/grown=%v", f, grown), func(t *testing.T) {
				cb := &cursorBackend{Backend: trie.NewMemoryBackend()}
				src, err := trie.Open(cb, &trie.Options{Format: f, Records: vertex.KeysOnce})
				trietest.Must(t, err, "Open")
				if grown {
					trietest.GrowState(t, src, accts, 300, 3)
				} else {
					trietest.LoadState(t, src, accts, 9)
				}
				_, want := loaded(t, other(f), accts, true)
				b := trie.NewMemoryBackend()
				dst, err := trie.Open(b, &trie.Options{Format: other(f), Records: vertex.KeysOnce})
				trietest.Must(t, err, "Open")
				ctx, cancel := context.WithCancel(context.Background())
				_, err = dst.CopyFrom(ctx, src, trie.CopyOptions{Block: 9, CheckpointRecords: 100,
					Checkpoint: func([]byte, trie.CopyProgress) error { cancel(); return nil }})
				if !errors.Is(err, context.Canceled) || cb.open.Load() != 0 {
					t.Fatalf("stopped copy: %v, %d cursors left open", err, cb.open.Load())
				}
				b = trie.NewMemoryBackend()
				dst, err = trie.Open(b, &trie.Options{Format: other(f), Records: vertex.KeysOnce})
				trietest.Must(t, err, "Open")
				_, err = dst.CopyFrom(context.Background(), src, trie.CopyOptions{Block: 9})
				trietest.Must(t, err, "CopyFrom")
				trietest.SameRecords(t, b, want)
				if cb.open.Load() != 0 || cb.made.Load() == 0 {
					t.Fatalf("%d cursors made, %d left open", cb.made.Load(), cb.open.Load())
				}
			})
		}
	}
}
