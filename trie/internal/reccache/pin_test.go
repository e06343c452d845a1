package reccache

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/vertex"
)

// Pinned records survive the ring's turns; pins never take more than half of
// a chunk, so a cache asked to pin everything still takes new records; a new
// version of a pinned record stays pinned.

// turnRing puts n unpinned records with IDs from first, enough to come round
// the ring of a small cache several times.
func turnRing(c *Cache, first vertex.ID, n int) {
	for i := range n {
		c.Put(first+vertex.ID(i), ciRecord(fmt.Sprintf("filler-%08d", i)))
	}
}

// checkPinned fails unless Stats counts exactly the pinned entries the
// shards' chunks hold.
func checkPinned(t *testing.T, c *Cache, when string) int {
	t.Helper()
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		for ci := range s.chunks {
			s.eachLive(ci, func(_ vertex.ID, slot int, _ []byte) {
				if s.idx.At(slot)&pinBit != 0 {
					n++
				}
			})
		}
	}
	if got := c.Stats().Pinned; got != n {
		t.Fatalf("%s: Stats says %d pinned, the chunks hold %d", when, got, n)
	}
	return n
}

func TestCachePinnedSurviveTheRing(t *testing.T) {
	c := New(16 * 16 << 10) // 16 shards of 16 KiB: the index binds before the ring
	for id := vertex.ID(1); id <= 64; id++ {
		c.PutPinned(id, ciRecord(fmt.Sprintf("pinned-%d", id)))
	}
	c.Put(100, ciRecord("not pinned"))
	c.Put(101, ciRecord("pinned later"))
	c.PutPinned(101, ciRecord("pinned later, in a larger version"))
	if n := checkPinned(t, c, "after pinning"); n != 65 {
		t.Fatalf("%d pinned, want 65", n)
	}
	turnRing(c, 1000, 50000)
	checkPinned(t, c, "after the ring's turns")
	if c.Contains(100) {
		t.Fatal("an unpinned record outlived 50,000 newer ones")
	}
	for id := vertex.ID(1); id <= 64; id++ {
		if got := ciGet(t, c, id); got != fmt.Sprintf("pinned-%d", id) {
			t.Fatalf("pinned id %d reads %q after the ring came round", id, got)
		}
	}
	// New versions, one in place and one larger (appended), stay pinned.
	c.Put(1, ciRecord("pinned-X"))
	c.Refresh([]vertex.Record{{ID: 2, Rec: ciRecord("pinned-2, a longer second version")}}, nil)
	turnRing(c, 100000, 50000)
	checkPinned(t, c, "after updates")
	if got := ciGet(t, c, 1); got != "pinned-X" {
		t.Fatalf("id 1 after an update in place and the ring's turns: %q", got)
	}
	if got := ciGet(t, c, 2); got != "pinned-2, a longer second version" {
		t.Fatalf("id 2 after a larger update and the ring's turns: %q", got)
	}
	// A removed pinned record is gone for good.
	c.Refresh(nil, []vertex.ID{3})
	turnRing(c, 200000, 50000)
	if c.Contains(3) {
		t.Fatal("a removed pinned record came back")
	}
	if n := checkPinned(t, c, "after a removal"); n != 64 {
		t.Fatalf("%d pinned, want 64", n)
	}
}

func TestCachePinsBounded(t *testing.T) {
	for _, size := range []int{20, 300} { // the index binds first; the ring does
		t.Run(fmt.Sprint(size), func(t *testing.T) { testPinsBounded(t, size) })
	}
}

func testPinsBounded(t *testing.T, size int) {
	c := New(16 * 16 << 10)
	n := 50000 * 20 / size
	pad := string(make([]byte, size))
	want := func(id int) string { // every seventh record is updated three puts later
		if (id+3)%7 == 0 && id+3 <= n {
			return fmt.Sprintf("value-%d", id) + pad + "longer"
		}
		return fmt.Sprintf("value-%d", id) + pad
	}
	for i := 1; i <= n; i++ {
		c.PutPinned(vertex.ID(i), ciRecord(fmt.Sprintf("value-%d", i)+pad))
		if st := c.Stats(); st.Bytes > st.Budget {
			t.Fatalf("after %d pinned puts the ring holds %d bytes, over its budget %d", i, st.Bytes, st.Budget)
		}
		if i%1000 == 0 {
			checkPinned(t, c, fmt.Sprintf("after %d pinned puts", i))
		}
		if i%7 == 0 { // a larger version, appended, perhaps after its chunk was recycled
			c.Put(vertex.ID(i-3), ciRecord(fmt.Sprintf("value-%d", i-3)+pad+"longer"))
		}
	}
	st := c.Stats()
	if st.Entries == 0 || st.Entries >= n/4 {
		t.Fatalf("%d of %d pinned records cached in %d bytes", st.Entries, n, st.Budget)
	}
	// The newest records are cached: pinning everything never stops the
	// cache from taking new ones.
	for i := n - 10; i <= n; i++ {
		if got := ciGet(t, c, vertex.ID(i)); got != want(i) {
			t.Fatalf("id %d, among the last put, reads %q", i, got)
		}
	}
	// A chunk of pinned records keeps at most half of itself when recycled,
	// and what it keeps still reads back.
	for i := range c.shards {
		s := &c.shards[i]
		for ci := range s.chunks {
			s.recycle(ci, true)
			if 2*len(s.chunks[ci]) > s.chunk {
				t.Fatalf("a recycled chunk kept %d of its %d bytes", len(s.chunks[ci]), s.chunk)
			}
			s.eachLive(ci, func(id vertex.ID, _ int, _ []byte) {
				if got := ciGet(t, c, id); got != want(int(id)) {
					t.Fatalf("kept id %d reads %q", id, got)
				}
			})
		}
	}
	checkPinned(t, c, "after the recycles")
	// Unpinned records still get room.
	turnRing(c, vertex.ID(n+1), 5000)
	if got := ciGet(t, c, vertex.ID(n+5000)); got != "filler-00004999" {
		t.Fatalf("the last unpinned record reads %q", got)
	}
}

// A pinned branch is kept without its children's keys, whether pinned with
// them or given them in a new version (a persist's, a hash's); an unpinned
// one keeps them.
func TestCachePinnedWithoutChildKeys(t *testing.T) {
	keys := &[16]hashkey.Key{2: hashkey.HashKey(hashkey.EmptyCodeHash), 5: hashkey.HashKey(hashkey.EmptyRoot)}
	branch := func(base vertex.ID) []byte {
		return vertex.Encode(nil, &vertex.Vertex{Kind: vertex.Branch, Used: 0x0024, Base: base, Key: hashkey.HashKey(hashkey.EmptyRoot),
			ChildKeys: vertex.PackChildKeys(nil, 0x0024, keys)})
	}
	cached := func(c *Cache, id vertex.ID) []byte {
		var out []byte
		if ok, _ := c.Get(id, func(rec []byte) error { out = append(out, rec...); return nil }); !ok {
			t.Fatalf("id %d not cached", id)
		}
		return out
	}
	c := New(16 * 64 << 10)
	c.PutPinned(1, branch(1<<20)) // pinned with its keys
	c.Put(2, branch(2<<20))       // unpinned
	c.PutPinned(3, vertex.AppendWithoutChildKeys(nil, branch(3<<20)))
	c.Refresh([]vertex.Record{{ID: 3, Rec: branch(3 << 20)}}, nil) // a persist's version with keys
	c.Put(3, branch(3<<20))                                        // a hash's
	for id, pinned := range map[vertex.ID]bool{1: true, 2: false, 3: true} {
		rec, want := cached(c, id), branch(id<<20)
		if pinned {
			want = vertex.AppendWithoutChildKeys(nil, want)
		}
		if !bytes.Equal(rec, want) {
			t.Fatalf("id %d (pinned %v) cached as %x, want %x", id, pinned, rec, want)
		}
		if _, err := vertex.Decode(rec); err != nil {
			t.Fatalf("id %d: cached record does not decode: %v", id, err)
		}
	}
	if n := checkPinned(t, c, "after the puts"); n != 2 {
		t.Fatalf("%d pinned, want 2", n)
	}
}

// A cache filled with pins at once (as PrefetchUpperLevels fills it after a
// restart) keeps them all when the ring comes round, as long as they take
// less than half of it: they are spread at most half a chunk to a chunk.
func TestCachePinsSpreadWhileFilling(t *testing.T) {
	c := New(16 << 20)
	pad := strings.Repeat("p", 80)
	const pins = 40000 // ~4.4 MiB of the ~12 MiB ring
	for id := vertex.ID(1); id <= pins; id++ {
		c.PutPinned(id, ciRecord(fmt.Sprint(id, pad)))
	}
	turnRing(c, pins+1, 1_000_000)
	if c.Stats().Evicted == 0 {
		t.Fatal("the ring did not come round")
	}
	if n := checkPinned(t, c, "after the ring's turns"); n != pins {
		t.Fatalf("%d of %d pins kept", n, pins)
	}
	for id := vertex.ID(1); id <= pins; id += 97 {
		if got := ciGet(t, c, id); got != fmt.Sprint(id, pad) {
			t.Fatalf("pinned id %d reads %q", id, got)
		}
	}
}
