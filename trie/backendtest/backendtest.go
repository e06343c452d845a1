package backendtest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// Run checks the trie.Backend contract on backends returned by open, which must
// return a new, empty store on every call (the suite closes it; open may also
// register its own cleanup).
func Run(t *testing.T, open func(t *testing.T) trie.Backend) {
	t.Helper()
	fresh := func(t *testing.T) trie.Backend {
		t.Helper()
		b := open(t)
		t.Cleanup(func() { b.Close() })
		return b
	}
	t.Run("Empty", func(t *testing.T) { testEmpty(t, fresh(t)) })
	t.Run("WriteRead", func(t *testing.T) { testWriteRead(t, fresh(t)) })
	t.Run("WriteMixed", func(t *testing.T) { testWriteMixed(t, fresh(t)) })
	t.Run("DeleteAbsent", func(t *testing.T) { testDeleteAbsent(t, fresh(t)) })
	t.Run("CallerOwnsResults", func(t *testing.T) { testCallerOwnsResults(t, fresh(t)) })
	t.Run("BatchNotKept", func(t *testing.T) { testBatchNotKept(t, fresh(t)) })
	t.Run("AdminUnchanged", func(t *testing.T) { testAdminUnchanged(t, fresh(t)) })
	t.Run("VertexRange", func(t *testing.T) { testVertexRange(t, fresh(t)) })
	t.Run("VertexRangeStop", func(t *testing.T) { testVertexRangeStop(t, fresh(t)) })
	t.Run("Vertices", func(t *testing.T) { testVertices(t, fresh(t)) })
	t.Run("LargeRecords", func(t *testing.T) { testLargeRecords(t, fresh(t)) })
	t.Run("StripChildKeys", func(t *testing.T) { testStripChildKeys(t, fresh(t)) })
	t.Run("Stats", func(t *testing.T) { testStats(t, fresh(t)) })
	t.Run("ConcurrentReads", func(t *testing.T) { testConcurrentReads(t, fresh(t)) })
	t.Run("Leaves", func(t *testing.T) { testLeaves(t, fresh(t)) })
	t.Run("LeavesMany", func(t *testing.T) { testLeavesMany(t, fresh(t)) })
	t.Run("CloseTwice", func(t *testing.T) {
		b := open(t)
		if err := b.Close(); err != nil {
			t.Fatalf("first Close: %v", err)
		}
		if err := b.Close(); err != nil {
			t.Fatalf("second Close = %v, want nil", err)
		}
	})
}

// RunDurable runs Run on stores in fresh directories and then checks that what
// Write stored survives Close and a reopen of the same directory. open must
// open (creating when needed) the store in dir.
func RunDurable(t *testing.T, open func(t *testing.T, dir string) trie.Backend) {
	t.Helper()
	Run(t, func(t *testing.T) trie.Backend { return open(t, t.TempDir()) })
	t.Run("Reopen", func(t *testing.T) {
		dir := t.TempDir()
		b := open(t, dir)
		mustWrite(t, b, &vertex.Batch{Puts: recs(1, "one", 2, "two", 3, "three", 40, "forty"), Admin: []byte("admin-1")})
		mustWrite(t, b, &vertex.Batch{Puts: recs(2, "two'"), Deletes: []vertex.ID{3}})
		closeOK(t, b)

		b = open(t, dir)
		wantRecords(t, b, map[vertex.ID]string{1: "one", 2: "two'", 3: "", 40: "forty"})
		wantAdmin(t, b, "admin-1")
		wantRange(t, b, 1, 64, map[vertex.ID]string{1: "one", 2: "two'", 40: "forty"})
		mustWrite(t, b, &vertex.Batch{Deletes: []vertex.ID{1, 40}, Admin: []byte("admin-2")})
		closeOK(t, b)

		b = open(t, dir)
		defer closeOK(t, b)
		wantRecords(t, b, map[vertex.ID]string{1: "", 2: "two'", 40: ""})
		wantAdmin(t, b, "admin-2")
	})
}

// recs builds records from (id, value) pairs.
func recs(kv ...any) []vertex.Record {
	var out []vertex.Record
	for i := 0; i < len(kv); i += 2 {
		out = append(out, vertex.Record{ID: vertex.ID(kv[i].(int)), Rec: []byte(kv[i+1].(string))})
	}
	return out
}

func mustWrite(t *testing.T, b trie.Backend, batch *vertex.Batch) {
	t.Helper()
	if err := b.Write(batch); err != nil {
		t.Fatalf("Write: %v", err)
	}
}

func closeOK(t *testing.T, b trie.Backend) {
	t.Helper()
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// wantRecords checks Vertex for every id of want; "" means absent, which must
// read as (nil, nil).
func wantRecords(t *testing.T, b trie.Backend, want map[vertex.ID]string) {
	t.Helper()
	for _, id := range slices.Sorted(func(yield func(vertex.ID) bool) {
		for id := range want {
			if !yield(id) {
				return
			}
		}
	}) {
		got, err := b.Vertex(id)
		if err != nil {
			t.Fatalf("Vertex(%d): %v", id, err)
		}
		if w := want[id]; w == "" {
			if got != nil {
				t.Fatalf("Vertex(%d) = %q, want (nil, nil) for an absent record", id, got)
			}
		} else if string(got) != w {
			t.Fatalf("Vertex(%d) = %q, want %q", id, got, w)
		}
	}
}

func wantAdmin(t *testing.T, b trie.Backend, want string) {
	t.Helper()
	got, err := b.Admin()
	if err != nil {
		t.Fatalf("Admin: %v", err)
	}
	if string(got) != want {
		t.Fatalf("Admin = %q, want %q", got, want)
	}
}

// rangeOf collects what VertexRange(first, n) yields, checking the order.
func rangeOf(t *testing.T, b trie.Backend, first vertex.ID, n int) map[vertex.ID]string {
	t.Helper()
	got := map[vertex.ID]string{}
	var prev vertex.ID
	err := b.VertexRange(first, n, func(id vertex.ID, rec []byte) error {
		if len(got) > 0 && id <= prev {
			t.Errorf("VertexRange(%d, %d) yields %d after %d: not ascending", first, n, id, prev)
		}
		if id < first || uint64(id-first) >= uint64(n) {
			t.Errorf("VertexRange(%d, %d) yields %d, outside [%d, %d)", first, n, id, first, uint64(first)+uint64(n))
		}
		prev = id
		got[id] = string(rec) // rec is only valid during the call: copy it now
		return nil
	})
	if err != nil {
		t.Fatalf("VertexRange(%d, %d): %v", first, n, err)
	}
	return got
}

func wantRange(t *testing.T, b trie.Backend, first vertex.ID, n int, want map[vertex.ID]string) {
	t.Helper()
	if got := rangeOf(t, b, first, n); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("VertexRange(%d, %d) yields %v, want %v", first, n, got, want)
	}
}

func testEmpty(t *testing.T, b trie.Backend) {
	a, err := b.Admin()
	if err != nil || a != nil {
		t.Fatalf("Admin of a new store = %q, %v; want (nil, nil)", a, err)
	}
	for _, id := range []vertex.ID{0, 1, 2, 1 << 40} {
		rec, err := b.Vertex(id)
		if err != nil || rec != nil {
			t.Fatalf("Vertex(%d) of a new store = %q, %v; want (nil, nil)", id, rec, err)
		}
	}
	wantRange(t, b, 1, 100, map[vertex.ID]string{})
}

func testWriteRead(t *testing.T, b trie.Backend) {
	mustWrite(t, b, &vertex.Batch{Puts: recs(1, "root", 2, "b", 17, "seventeen", 255, "x", 256, "y", 1<<33, "far"), Admin: []byte("adm")})
	wantRecords(t, b, map[vertex.ID]string{1: "root", 2: "b", 3: "", 17: "seventeen", 255: "x", 256: "y", 257: "", 1 << 33: "far"})
	wantAdmin(t, b, "adm")
	// Overwrite.
	mustWrite(t, b, &vertex.Batch{Puts: recs(2, "b2", 17, "17")})
	wantRecords(t, b, map[vertex.ID]string{1: "root", 2: "b2", 17: "17"})
	wantAdmin(t, b, "adm")
}

// testWriteMixed writes puts, deletes and the admin record in one batch: all of
// it must apply.
func testWriteMixed(t *testing.T, b trie.Backend) {
	mustWrite(t, b, &vertex.Batch{Puts: recs(1, "a", 2, "b", 3, "c"), Admin: []byte("v1")})
	mustWrite(t, b, &vertex.Batch{Puts: recs(4, "d", 2, "B"), Deletes: []vertex.ID{1, 3}, Admin: []byte("v2")})
	wantRecords(t, b, map[vertex.ID]string{1: "", 2: "B", 3: "", 4: "d"})
	wantAdmin(t, b, "v2")
	wantRange(t, b, 0, 10, map[vertex.ID]string{2: "B", 4: "d"})
}

func testDeleteAbsent(t *testing.T, b trie.Backend) {
	mustWrite(t, b, &vertex.Batch{Puts: recs(5, "five")})
	if err := b.Write(&vertex.Batch{Deletes: []vertex.ID{6, 1 << 50, 5, 5}}); err != nil {
		t.Fatalf("Write deleting absent IDs: %v", err)
	}
	wantRecords(t, b, map[vertex.ID]string{5: "", 6: ""})
	if err := b.Write(&vertex.Batch{Deletes: []vertex.ID{5}}); err != nil {
		t.Fatalf("Write deleting an already deleted ID: %v", err)
	}
	a, err := b.Admin()
	if err != nil || a != nil {
		t.Fatalf("Admin after batches without one = %q, %v; want (nil, nil)", a, err)
	}
}

// testCallerOwnsResults scribbles over what Vertex and Admin returned: the
// store must not see it.
func testCallerOwnsResults(t *testing.T, b trie.Backend) {
	mustWrite(t, b, &vertex.Batch{Puts: recs(7, "seven"), Admin: []byte("admin")})
	rec, err := b.Vertex(7)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rec {
		rec[i] = 'X'
	}
	a, err := b.Admin()
	if err != nil {
		t.Fatal(err)
	}
	for i := range a {
		a[i] = 'X'
	}
	wantRecords(t, b, map[vertex.ID]string{7: "seven"})
	wantAdmin(t, b, "admin")
}

// testBatchNotKept reuses a batch's slices after Write, as callers do: the store
// must have copied them.
func testBatchNotKept(t *testing.T, b trie.Backend) {
	buf := []byte("aaaabbbbcccc")
	admin := []byte("admin-A")
	batch := &vertex.Batch{
		Puts:    []vertex.Record{{ID: 1, Rec: buf[0:4]}, {ID: 2, Rec: buf[4:8]}, {ID: 3, Rec: buf[8:12]}},
		Deletes: []vertex.ID{9},
		Admin:   admin,
	}
	mustWrite(t, b, batch)
	copy(buf, "XXXXYYYYZZZZ")
	copy(admin, "admin-B")
	batch.Puts[0].ID = 9
	batch.Deletes[0] = 1
	wantRecords(t, b, map[vertex.ID]string{1: "aaaa", 2: "bbbb", 3: "cccc", 9: ""})
	wantAdmin(t, b, "admin-A")
	wantRange(t, b, 1, 3, map[vertex.ID]string{1: "aaaa", 2: "bbbb", 3: "cccc"})
}

// testAdminUnchanged: a batch with a nil admin record leaves it as it is.
func testAdminUnchanged(t *testing.T, b trie.Backend) {
	mustWrite(t, b, &vertex.Batch{Admin: []byte("first")})
	wantAdmin(t, b, "first")
	mustWrite(t, b, &vertex.Batch{Puts: recs(1, "r")})
	wantAdmin(t, b, "first")
	mustWrite(t, b, &vertex.Batch{Admin: []byte("second")})
	wantAdmin(t, b, "second")
}

func testVertexRange(t *testing.T, b trie.Backend) {
	// Written out of order, over two batches.
	mustWrite(t, b, &vertex.Batch{Puts: recs(20, "t", 13, "m", 10, "j", 1000, "k")})
	mustWrite(t, b, &vertex.Batch{Puts: recs(19, "s", 11, "k", 17, "q")})
	wantRange(t, b, 11, 9, map[vertex.ID]string{11: "k", 13: "m", 17: "q", 19: "s"}) // [11, 20): not 10, not 20
	wantRange(t, b, 10, 11, map[vertex.ID]string{10: "j", 11: "k", 13: "m", 17: "q", 19: "s", 20: "t"})
	wantRange(t, b, 10, 1, map[vertex.ID]string{10: "j"})
	wantRange(t, b, 12, 1, map[vertex.ID]string{})
	wantRange(t, b, 21, 16, map[vertex.ID]string{}) // empty range between records
	wantRange(t, b, 1001, 100, map[vertex.ID]string{})
	wantRange(t, b, 10, 0, map[vertex.ID]string{}) // n = 0 reads nothing
	wantRange(t, b, 0, 2000, map[vertex.ID]string{10: "j", 11: "k", 13: "m", 17: "q", 19: "s", 20: "t", 1000: "k"})
	// Deleted records are gone from ranges too.
	mustWrite(t, b, &vertex.Batch{Deletes: []vertex.ID{13, 20}})
	wantRange(t, b, 10, 11, map[vertex.ID]string{10: "j", 11: "k", 17: "q", 19: "s"})
}

var errStop = errors.New("stop here")

func testVertexRangeStop(t *testing.T, b trie.Backend) {
	mustWrite(t, b, &vertex.Batch{Puts: recs(1, "a", 2, "b", 3, "c", 4, "d")})
	var seen []vertex.ID
	err := b.VertexRange(1, 16, func(id vertex.ID, rec []byte) error {
		seen = append(seen, id)
		if id == 2 {
			return fmt.Errorf("wrapped: %w", errStop)
		}
		return nil
	})
	if !errors.Is(err, errStop) {
		t.Fatalf("VertexRange returned %v, want the callback's error", err)
	}
	if !slices.Equal(seen, []vertex.ID{1, 2}) {
		t.Fatalf("VertexRange called fn for %v after an error at 2, want [1 2]", seen)
	}
	// The store is still usable.
	wantRange(t, b, 1, 16, map[vertex.ID]string{1: "a", 2: "b", 3: "c", 4: "d"})
}

// testVertices reads records by ID in one batch: in order, nil for absent
// IDs (an empty record is present), in runs longer than one MultiGet, in
// any order, records larger than a scan buffer whole, counted in Stats, and
// fn's error stops it.
func testVertices(t *testing.T, b trie.Backend) {
	big := bytes.Repeat([]byte("vertices"), 1<<10) // 8 KiB
	var puts []vertex.Record
	want := map[vertex.ID][]byte{}
	for id := vertex.ID(16); id < 16+300; id += 3 {
		rec := []byte(fmt.Sprintf("rec%d", id))
		switch id {
		case 19:
			rec = []byte{}
		case 22, 40:
			rec = big
		}
		puts = append(puts, vertex.Record{ID: id, Rec: rec})
		want[id] = rec
	}
	mustWrite(t, b, &vertex.Batch{Puts: puts})
	var ids []vertex.ID
	for id := vertex.ID(10); id < 16+310; id++ {
		ids = append(ids, id)
	}
	check := func(ids []vertex.ID) {
		t.Helper()
		next := 0
		err := b.Vertices(ids, func(i int, rec []byte) error {
			if i != next {
				return fmt.Errorf("fn called for index %d, want %d", i, next)
			}
			next++
			w, ok := want[ids[i]]
			switch {
			case !ok && rec != nil:
				return fmt.Errorf("vertex %d: %q, want nil for an absent record", ids[i], rec)
			case ok && (rec == nil || !bytes.Equal(rec, w)):
				return fmt.Errorf("vertex %d: %d bytes %.16q, want %d bytes %.16q", ids[i], len(rec), rec, len(w), w)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("Vertices(%d IDs): %v", len(ids), err)
		}
		if next != len(ids) {
			t.Fatalf("Vertices(%d IDs) called fn %d times", len(ids), next)
		}
	}
	s0 := b.Stats()
	check(ids)
	if d := b.Stats(); d.BatchReads != s0.BatchReads+1 || d.BatchKeys != s0.BatchKeys+uint64(len(ids)) || d.Records != s0.Records+uint64(len(want)) {
		t.Fatalf("Stats after Vertices of %d IDs, %d present: %+v -> %+v; want one batch read, its IDs and its records counted", len(ids), len(want), s0, d)
	}
	check(ids[:0])
	rev := slices.Clone(ids[:40])
	slices.Reverse(rev)
	check(rev)
	stop := errors.New("stop")
	calls := 0
	if err := b.Vertices(ids, func(int, []byte) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("Vertices with fn failing: %v after %d calls, want its error after 1", err, calls)
	}
}

func testLargeRecords(t *testing.T, b trie.Backend) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<14) // 256 KiB
	mustWrite(t, b, &vertex.Batch{Puts: []vertex.Record{{ID: 3, Rec: big}, {ID: 4, Rec: big[:1]}}})
	got, err := b.Vertex(3)
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("Vertex(3) = %d bytes, %v; want the %d bytes written", len(got), err, len(big))
	}
	wantRange(t, b, 3, 2, map[vertex.ID]string{3: string(big), 4: "0"})
}

// testStripChildKeys writes branch records with their children's keys in a
// batch that strips them: the store holds them without (by Vertex and
// VertexRange), other records as they are.
func testStripChildKeys(t *testing.T, b trie.Backend) {
	keys := &[16]hashkey.Key{1: hashkey.HashKey(hashkey.EmptyCodeHash), 7: hashkey.HashKey(hashkey.EmptyRoot)}
	var puts []vertex.Record
	want := map[vertex.ID]string{}
	for i := range 3 {
		id := vertex.ID(16 + i)
		rec := vertex.Encode(nil, &vertex.Vertex{Kind: vertex.Branch, Used: 0x0082, Base: vertex.ID(1000 + 16*i), Key: hashkey.HashKey(hashkey.EmptyRoot), ChildKeys: vertex.PackChildKeys(nil, 0x0082, keys)})
		if !vertex.HasChildKeys(rec) {
			t.Fatalf("sample branch %x has no child keys", rec)
		}
		puts = append(puts, vertex.Record{ID: id, Rec: rec})
		want[id] = string(vertex.AppendWithoutChildKeys(nil, rec))
	}
	puts = append(puts, vertex.Record{ID: 19, Rec: []byte("plain")})
	want[19] = "plain"
	mustWrite(t, b, &vertex.Batch{Puts: puts, StripChildKeys: true})
	wantRecords(t, b, want)
	wantRange(t, b, 16, 4, want)
}

func testStats(t *testing.T, b trie.Backend) {
	mustWrite(t, b, &vertex.Batch{Puts: recs(1, "a", 2, "b", 3, "c")})
	s0 := b.Stats()
	if _, err := b.Vertex(1); err != nil {
		t.Fatal(err)
	}
	s1 := b.Stats()
	if s1.PointReads <= s0.PointReads || s1.Records <= s0.Records {
		t.Fatalf("Stats after a point read of a present record: %+v -> %+v; want PointReads and Records to grow", s0, s1)
	}
	if _, err := b.Vertex(99); err != nil {
		t.Fatal(err)
	}
	s2 := b.Stats()
	if s2.PointReads <= s1.PointReads {
		t.Fatalf("Stats after a point read of an absent record: %+v -> %+v; want PointReads to grow", s1, s2)
	}
	if got := rangeOf(t, b, 1, 16); len(got) != 3 {
		t.Fatalf("VertexRange(1, 16) yields %v", got)
	}
	s3 := b.Stats()
	if s3.RangeReads <= s2.RangeReads || s3.Records < s2.Records+3 {
		t.Fatalf("Stats after a range read of 3 records: %+v -> %+v; want RangeReads to grow and Records by 3", s2, s3)
	}
	if s3.PointReads != s2.PointReads {
		t.Fatalf("a range read counted as a point read: %+v -> %+v", s2, s3)
	}
}

// testConcurrentReads reads from several goroutines at once (meaningful under
// -race).
func testConcurrentReads(t *testing.T, b trie.Backend) {
	const n = 64
	var puts []vertex.Record
	for i := 1; i <= n; i++ {
		puts = append(puts, vertex.Record{ID: vertex.ID(i), Rec: fmt.Appendf(nil, "rec-%d", i)})
	}
	mustWrite(t, b, &vertex.Batch{Puts: puts, Admin: []byte("adm")})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 6; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; round < 50; round++ {
				id := vertex.ID(1 + (g*7+round)%n)
				rec, err := b.Vertex(id)
				if err != nil || string(rec) != fmt.Sprintf("rec-%d", id) {
					errs <- fmt.Errorf("Vertex(%d) = %q, %v", id, rec, err)
					return
				}
				cnt := 0
				err = b.VertexRange(id, 16, func(i vertex.ID, rec []byte) error {
					if string(rec) != fmt.Sprintf("rec-%d", i) {
						return fmt.Errorf("VertexRange: record %d = %q", i, rec)
					}
					cnt++
					return nil
				})
				if want := min(16, n+1-int(id)); err != nil || cnt != want {
					errs <- fmt.Errorf("VertexRange(%d, 16): %d records, %v; want %d", id, cnt, err, want)
					return
				}
				ids := []vertex.ID{id, id + 2, id + 5}
				err = b.Vertices(ids, func(i int, rec []byte) error {
					if want := fmt.Sprintf("rec-%d", ids[i]); ids[i] <= n && string(rec) != want || ids[i] > n && rec != nil {
						return fmt.Errorf("Vertices: record %d = %q", ids[i], rec)
					}
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
				if a, err := b.Admin(); err != nil || string(a) != "adm" {
					errs <- fmt.Errorf("Admin = %q, %v", a, err)
					return
				}
				_ = b.Stats()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
