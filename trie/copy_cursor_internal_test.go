package trie

import (
	"testing"

	"github.com/hexstate/hexstate/vertex"
)

// countingCursors is a CursorBackend whose cursors read nothing.
type countingCursors struct{ made int }

type nopCursor struct{ n int }

func (c *countingCursors) NewRangeCursor() (RangeCursor, error) {
	c.made++
	return &nopCursor{n: c.made}, nil
}

func (*nopCursor) VertexRange(vertex.ID, int, func(vertex.ID, []byte) error) error { return nil }
func (*nopCursor) Close()                                                          {}

// TestCursorPoolKeepsStreams: interleaved streams of forward reads each keep
// a cursor of their own (each read a step from the cursor's last one), a
// read far from every cursor opens a new one while the pool is not full, and
// a full pool gives such a read the cursor used least recently.
func TestCursorPoolKeepsStreams(t *testing.T) {
	src := &countingCursors{}
	p := cursorPool{src: src}
	defer p.close()
	streams := []vertex.ID{100, 5000, 90000}
	got := map[int]RangeCursor{}
	for step := 0; step < 50; step++ {
		for s, at := range streams {
			c := p.pick(at+vertex.ID(step*copyStep), copyStep/2)
			if step > 0 && c != got[s] {
				t.Fatalf("stream %d read %d went to another cursor", s, step)
			}
			got[s] = c
		}
	}
	if src.made != len(streams) {
		t.Fatalf("%d cursors opened for %d streams", src.made, len(streams))
	}
	for i := 0; len(p.curs) < copyCursors; i++ {
		p.pick(vertex.ID(1_000_000+i*1000), 1)
	}
	if c := p.pick(10_000_000, 1); c != got[0] {
		t.Fatal("a read far from every cursor of a full pool did not get the least recently used one")
	}
}
