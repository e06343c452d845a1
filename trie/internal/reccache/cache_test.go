package reccache

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hexstate/hexstate/vertex"
)

// White-box tests of the vertex cache's ring: records come back as they were
// put, newer versions replace older ones (in place when they fit), the ring
// never holds more than its budget, and recycling a chunk never drops or mixes
// up an entry that lives elsewhere.

// ciRecord is the record of a leaf whose value is val.
func ciRecord(val string) []byte {
	return vertex.Encode(nil, &vertex.Vertex{Kind: vertex.Leaf, Payload: vertex.RawPayload, Path: []byte{1, 2, 3}, Value: []byte(val)})
}

// ciGet returns the value of the leaf cached at id ("" when not cached).
func ciGet(t *testing.T, c *Cache, id vertex.ID) string {
	t.Helper()
	var v *vertex.Vertex
	_, err := c.Get(id, func(rec []byte) (err error) { v, err = vertex.Decode(rec); return err })
	if err != nil {
		t.Fatalf("Get(%d): %v", id, err)
	}
	if v == nil {
		return ""
	}
	return string(v.Value)
}

func TestCacheReplaceInPlace(t *testing.T) {
	c := New(16 << 20)
	c.Put(7, ciRecord("version-1"))
	held := c.Stats().Bytes
	c.Put(7, ciRecord("version-2")) // same size: overwritten in its slot
	if got := ciGet(t, c, 7); got != "version-2" {
		t.Fatalf("after a same-size update got %q", got)
	}
	if b := c.Stats().Bytes; b != held {
		t.Fatalf("a same-size update grew the ring from %d to %d bytes", held, b)
	}
	c.Put(7, ciRecord("v3")) // smaller: still in place
	if got := ciGet(t, c, 7); got != "v3" {
		t.Fatalf("after a smaller update got %q", got)
	}
	c.Put(7, ciRecord("a much longer version 4")) // larger: appended
	if got := ciGet(t, c, 7); got != "a much longer version 4" {
		t.Fatalf("after a larger update got %q", got)
	}
	if st := c.Stats(); st.Entries != 1 || st.Bytes <= held {
		t.Fatalf("stats after a larger update: %+v (held %d before)", st, held)
	}
	c.Refresh(nil, []vertex.ID{7})
	if got := ciGet(t, c, 7); got != "" || c.Contains(7) {
		t.Fatalf("removed id still cached: %q", got)
	}
}

func TestCacheRingBounded(t *testing.T) {
	// 16 shards of 8 KiB: one chunk each, recycled over and over.
	c := New(16 * 8 << 10)
	const n = 20000
	for i := 1; i <= n; i++ {
		c.Put(vertex.ID(i), ciRecord(fmt.Sprintf("value-%d", i)))
		if i%3 == 0 { // an update that no longer fits its slot leaves garbage behind
			c.Put(vertex.ID(i-1), ciRecord(fmt.Sprintf("value-%d-updated-and-longer", i-1)))
		}
		if st := c.Stats(); st.Bytes > st.Budget {
			t.Fatalf("after %d puts the ring holds %d bytes, over its budget %d", i, st.Bytes, st.Budget)
		}
	}
	st := c.Stats()
	if st.Entries == 0 || st.Entries >= n/2 {
		t.Fatalf("%d entries cached of %d put into %d bytes", st.Entries, n, st.Budget)
	}
	cached := 0
	for i := 1; i <= n; i++ {
		got := ciGet(t, c, vertex.ID(i))
		if got == "" {
			continue
		}
		cached++
		want := fmt.Sprintf("value-%d", i)
		if (i+1)%3 == 0 && i < n {
			want += "-updated-and-longer"
		}
		if got != want {
			t.Fatalf("id %d reads %q, want %q", i, got, want)
		}
	}
	if cached != st.Entries {
		t.Fatalf("%d ids readable, stats say %d entries", cached, st.Entries)
	}
	if got := ciGet(t, c, n); got != fmt.Sprintf("value-%d", n) {
		t.Fatalf("the last record put is not cached: %q", got)
	}
}

func TestCacheOversizedAndDisabled(t *testing.T) {
	c := New(16 * 4 << 10) // 4 KiB chunks
	c.Put(1, ciRecord("small"))
	c.Put(1, ciRecord(string(bytes.Repeat([]byte{'x'}, 5000)))) // larger than a chunk
	if c.Contains(1) {
		t.Fatal("a record larger than a chunk is cached, or its older version kept")
	}

	off := New(1) // below one chunk per shard: caches nothing
	off.Put(1, ciRecord("small"))
	if st := off.Stats(); off.Contains(1) || st.Entries != 0 || st.Budget != 0 {
		t.Fatalf("a 1-byte cache holds something: %+v", st)
	}
}

func TestCacheCorruptRecordDropped(t *testing.T) {
	c := New(16 << 20)
	rec := ciRecord("fine")
	rec[0] |= 0xc0 // reserved tag bits
	c.Put(3, rec)
	if _, err := c.Get(3, func(rec []byte) error { _, err := vertex.Decode(rec); return err }); !errors.Is(err, vertex.ErrCorrupt) {
		t.Fatalf("get of a corrupt record: %v, want ErrCorrupt", err)
	}
	if c.Contains(3) {
		t.Fatal("a record that failed to decode stays cached")
	}
}

// TestCacheRefresh: on a cache with room, Refresh leaves it as Put of each
// record and then a removal of each deleted ID would: new versions replace
// cached ones, new IDs are added, deleted IDs are gone, IDs in neither keep
// their records.
func TestCacheRefresh(t *testing.T) {
	c := New(8 << 20)
	for id := vertex.ID(1); id <= 3000; id++ {
		c.Put(id, ciRecord(fmt.Sprint("old", id)))
	}
	var recs []vertex.Record
	for id := vertex.ID(2); id <= 4000; id += 2 {
		recs = append(recs, vertex.Record{ID: id, Rec: ciRecord(fmt.Sprint("new", id))})
	}
	var deleted []vertex.ID
	for id := vertex.ID(3); id <= 3000; id += 6 {
		deleted = append(deleted, id)
	}
	c.Refresh(recs, deleted)
	for id := vertex.ID(1); id <= 4000; id++ {
		var want []byte
		switch {
		case id%2 == 0:
			want = ciRecord(fmt.Sprint("new", id))
		case id%6 == 3 || id > 3000:
		default:
			want = ciRecord(fmt.Sprint("old", id))
		}
		var got []byte
		ok, err := c.Get(id, func(rec []byte) error { got = bytes.Clone(rec); return nil })
		if err != nil || ok != (want != nil) || !bytes.Equal(got, want) {
			t.Fatalf("ID %d: Get = %v, %v, %q; want %q", id, ok, err, got, want)
		}
	}
}

// TestCacheRefreshEvictsNothing: on a cache whose ring has come round,
// Refresh replaces the cached versions and removes the deleted IDs, and adds
// records it did not hold only into room no cached record holds: it evicts
// none.
func TestCacheRefreshEvictsNothing(t *testing.T) {
	pad := strings.Repeat("x", 200) // records large enough for the ring, not the index, to bind
	rec := func(v string, id vertex.ID) []byte { return ciRecord(fmt.Sprint(v, id, pad)) }
	c := New(16 << 20)
	const n = 100000
	for id := vertex.ID(1); id <= n; id++ {
		c.Put(id, rec("old", id))
	}
	st := c.Stats()
	if st.Evicted == 0 {
		t.Fatal("the ring did not come round: the test needs a smaller cache")
	}
	var cached []vertex.ID
	for id := vertex.ID(1); id <= n; id++ {
		if c.Contains(id) {
			cached = append(cached, id)
		}
	}
	var recs []vertex.Record
	for id := vertex.ID(1); id <= 2*n; id += 3 { // cached, evicted and new IDs
		recs = append(recs, vertex.Record{ID: id, Rec: rec("new", id)})
	}
	deleted := []vertex.ID{cached[0], cached[1]}
	c.Refresh(recs, deleted)
	got := c.Stats()
	if got.Evicted != st.Evicted {
		t.Fatalf("Refresh evicted %d records", got.Evicted-st.Evicted)
	}
	if added := got.Entries - (st.Entries - len(deleted)); added > len(recs)/10 {
		t.Fatalf("Refresh added %d of %d records to a full cache", added, len(recs))
	}
	for _, id := range cached[2:] {
		want := fmt.Sprint("old", id, pad)
		if id%3 == 1 {
			want = fmt.Sprint("new", id, pad)
		}
		if got := ciGet(t, c, id); got != want {
			t.Fatalf("ID %d reads %q after Refresh, want %q", id, got, want)
		}
	}
	for _, id := range deleted {
		if c.Contains(id) {
			t.Fatalf("deleted ID %d still cached", id)
		}
	}
}

// benchCache returns a cache of 256 MiB holding records of 60 bytes for
// vertices 1 to n, as a 1M-account state's vertex cache holds them.
func benchCache(n int) *Cache {
	c := New(256 << 20)
	rec := make([]byte, 60)
	for id := 1; id <= n; id++ {
		c.Put(vertex.ID(id), rec)
	}
	return c
}

// BenchmarkGet looks up random vertices of 2M cached ones.
func BenchmarkGet(b *testing.B) {
	const n = 2_000_000
	c := benchCache(n)
	r := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.Get(vertex.ID(1+r.IntN(n)), func([]byte) error { return nil })
	}
}

// BenchmarkRefresh replaces random vertices of 2M cached ones, 4,096 per call,
// as the background writer refreshes the cache after a persist.
func BenchmarkRefresh(b *testing.B) {
	const n = 2_000_000
	c := benchCache(n)
	r := rand.New(rand.NewPCG(3, 4))
	recs := make([]vertex.Record, 4096)
	rec := make([]byte, 60)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += len(recs) {
		for j := range recs {
			recs[j] = vertex.Record{ID: vertex.ID(1 + r.IntN(n)), Rec: rec}
		}
		c.Refresh(recs, nil)
	}
}

// TestCacheIndexBounded fills a cache with records small enough that its
// index fills before its ring: the index grows only with its use and never
// past its share of the budget, the ring drops its oldest chunks to make
// room, and every entry left reads back right.
func TestCacheIndexBounded(t *testing.T) {
	// Per shard: an index of at most 128 KiB (12,288 entries) and 14 chunks
	// of 64 KiB, ~3,600 of these entries each.
	c := New(16 << 20)
	if st := c.Stats(); st.Index > 16*4<<10 || st.Budget != 16<<20 {
		t.Fatalf("stats of a new cache: %+v", st)
	}
	const n = 400000
	for i := 1; i <= n; i++ {
		c.Put(vertex.ID(i), ciRecord(fmt.Sprint(i%10)))
		if i%1000 == 0 {
			st := c.Stats()
			if st.Index > 16*128<<10 || st.Bytes+st.Index > st.Budget || st.Entries > 16*12288 {
				t.Fatalf("after %d puts: %+v", i, st)
			}
			if i == 16000 && st.Index > 16*64<<10 {
				t.Fatalf("an index of %d bytes for %d entries: it did not grow with its use", st.Index, st.Entries)
			}
		}
	}
	cached := 0
	for i := 1; i <= n; i++ {
		if c.Contains(vertex.ID(i)) {
			cached++
			if got := ciGet(t, c, vertex.ID(i)); got != fmt.Sprint(i%10) {
				t.Fatalf("id %d reads back %q", i, got)
			}
		}
	}
	if !c.Contains(n) || cached < 16*8000 {
		t.Fatalf("%d entries cached (the last one: %v), want most of the index's 196,608", cached, c.Contains(n))
	}
}

// TestCacheIndexFullOverDeadChunk fills a shard's index while its oldest
// chunk holds only a replaced version's garbage: making room must drop more
// than that chunk, not run the index past its bound.
func TestCacheIndexFullOverDeadChunk(t *testing.T) {
	c := New(16 << 18) // per shard: three 64 KiB chunks, an index of 3,072 entries
	s := c.shard(1)
	if len(s.chunks) != 3 || s.idx.Max() != 3072 {
		t.Fatalf("%d chunks, an index of %d: not the shape this test needs", len(s.chunks), s.idx.Max())
	}
	c.Put(1, bytes.Repeat([]byte{1}, 60000))
	c.Put(1, bytes.Repeat([]byte{2}, 60001)) // larger: appended in the next chunk, the first is garbage
	n := 0
	for id := vertex.ID(2); n < 2*s.idx.Max(); id++ {
		if c.shard(id) != s {
			continue
		}
		c.Put(id, ciRecord("v"))
		n++
		if s.idx.Len() > s.idx.Max() {
			t.Fatalf("the index holds %d entries, over its bound %d", s.idx.Len(), s.idx.Max())
		}
		if !c.Contains(id) {
			t.Fatalf("the record just put for %d is not cached", id)
		}
	}
}

// TestCacheCountsEvictions: Evicted stays zero while every record put fits,
// and counts each entry dropped once the ring comes round, but not a
// record replaced by a newer version of itself.
func TestCacheCountsEvictions(t *testing.T) {
	c := New(1 << 20)
	rec := ciRecord("a value of some twenty bytes")
	for id := vertex.ID(1); id <= 1000; id++ {
		c.Put(id, rec)
		c.Put(id, rec) // a new version, in place
	}
	if st := c.Stats(); st.Evicted != 0 || st.Entries != 1000 {
		t.Fatalf("after 1,000 records that fit: %+v", st)
	}
	for id := vertex.ID(1001); id <= 100_000; id++ {
		c.Put(id, rec)
	}
	st := c.Stats()
	if st.Evicted == 0 || int(st.Evicted)+st.Entries != 100_000 {
		t.Fatalf("after 100,000 records in a 1 MiB cache: %+v, want Evicted + Entries = 100,000", st)
	}
}

// TestCachePutAbsent: PutAbsent leaves a cached version as it is (pin and
// all), and caches an absent ID's record, pinned when asked.
func TestCachePutAbsent(t *testing.T) {
	c := New(16 << 20)
	c.Put(7, ciRecord("cached"))
	c.PutAbsent(7, ciRecord("read"), true)
	if got, st := ciGet(t, c, 7), c.Stats(); got != "cached" || st.Pinned != 0 {
		t.Fatalf("PutAbsent over a cached ID: got %q, %d pinned", got, st.Pinned)
	}
	c.PutAbsent(8, ciRecord("read"), true)
	c.PutAbsent(9, ciRecord("read"), false)
	if a, b, st := ciGet(t, c, 8), ciGet(t, c, 9), c.Stats(); a != "read" || b != "read" || st.Pinned != 1 || st.Entries != 3 {
		t.Fatalf("PutAbsent of absent IDs: %q, %q, stats %+v", a, b, st)
	}
}
