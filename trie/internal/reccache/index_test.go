package reccache

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/hexstate/hexstate/vertex"
)

// TestIndexSameTag: IDs whose tags are equal (the index keeps no ID, only a
// 32-bit tag) each read back their own record, and removing one leaves the
// other.
func TestIndexSameTag(t *testing.T) {
	seen := make(map[uint32]vertex.ID)
	var pairs [][2]vertex.ID
	for id := vertex.ID(1); len(pairs) < 4; id++ {
		if other, ok := seen[tagOf(id)]; ok {
			pairs = append(pairs, [2]vertex.ID{other, id})
		}
		seen[tagOf(id)] = id
	}
	c := New(64 << 20)
	for _, p := range pairs {
		for _, id := range p {
			c.Put(id, ciRecord(fmt.Sprint("v", id)))
		}
		if c.shard(p[0]) == c.shard(p[1]) {
			t.Logf("IDs %d and %d share a tag and a shard", p[0], p[1])
		}
	}
	for _, p := range pairs {
		for _, id := range p {
			if got := ciGet(t, c, id); got != fmt.Sprint("v", id) {
				t.Fatalf("id %d (tag %#x) reads back %q", id, tagOf(id), got)
			}
		}
		c.Refresh(nil, []vertex.ID{p[0]})
		if c.Contains(p[0]) || ciGet(t, c, p[1]) != fmt.Sprint("v", p[1]) {
			t.Fatalf("after removing %d: it is cached %v, %d reads back %q", p[0], c.Contains(p[0]), p[1], ciGet(t, c, p[1]))
		}
	}
}

// TestIndexAgainstModel runs random puts (new and replaced, larger and
// smaller, pinned and not), removals and reads on a cache small enough that
// its ring comes round many times, against a map of the latest record put:
// whatever the cache holds is the latest version, and its counters agree
// with what its index holds.
func TestIndexAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	c := New(16 * 64 << 10)
	model := make(map[vertex.ID]string)
	const ids = 20_000
	for op := range 300_000 {
		id := vertex.ID(1 + rng.IntN(ids))
		switch r := rng.IntN(10); {
		case r < 6:
			v := fmt.Sprintf("%d-%s", op, make([]byte, rng.IntN(80)))
			if r == 0 {
				c.PutPinned(id, ciRecord(v))
			} else {
				c.Put(id, ciRecord(v))
			}
			model[id] = v
		case r < 7:
			c.Refresh(nil, []vertex.ID{id})
			delete(model, id)
		default:
			if got := ciGet(t, c, id); got != "" && got != model[id] {
				t.Fatalf("op %d: id %d reads back %q, the latest put was %q", op, id, got, model[id])
			}
		}
	}
	st := c.Stats()
	entries := 0
	for i := range c.shards {
		s := &c.shards[i]
		for ci := range s.chunks {
			s.eachLive(ci, func(vertex.ID, int, []byte) { entries++ })
		}
	}
	if st.Entries != entries || st.Entries == 0 || st.Evicted == 0 || st.Bytes+st.Index > st.Budget {
		t.Fatalf("stats %+v; the chunks hold %d indexed entries", st, entries)
	}
	checkPinned(t, c, "after the run")
}
