package rocks_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/hexstate/hexstate/internal/trietest"
	"github.com/hexstate/hexstate/rocks"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// TestBuildsLeaveCompactedStore: a StateLoader's Commit and the Persist of a
// BulkLoadAccounts frame return with the store compacted, in both layouts:
// no level-0 file, no compaction pending, every file at one level.
func TestBuildsLeaveCompactedStore(t *testing.T) {
	accts := trietest.StateAccounts(20000, 3)
	// Small memtables, so that the build leaves several level-0 files
	// unless it compacts them.
	small := &rocks.Options{WriteBufferBytes: 256 << 10}
	for _, f := range trietest.Formats {
		for _, how := range []string{"loader", "bulk"} {
			t.Run(f.String()+"/"+how, func(t *testing.T) {
				st, err := rocks.Open(t.TempDir(), small)
				trietest.Must(t, err, "rocks.Open")
				db, err := trie.Open(st, &trie.Options{Format: f})
				trietest.Must(t, err, "trie.Open")
				defer db.Close()
				if how == "loader" {
					trietest.LoadState(t, db, accts, 0)
				} else {
					fr := db.Begin()
					trietest.Must(t, fr.BulkLoadAccounts(accts), "BulkLoadAccounts")
					trietest.Must(t, db.Persist(fr, 0), "Persist")
				}
				prop := func(name string) string {
					v, err := st.Property(name)
					trietest.Must(t, err, "Property %s", name)
					return v
				}
				if n := prop("rocksdb.num-files-at-level0"); n != "0" {
					t.Errorf("%s level-0 files after the build", n)
				}
				if p := prop("rocksdb.compaction-pending"); p != "0" {
					t.Errorf("compaction pending after the build: %s", p)
				}
				levels := 0
				for l := 0; l < 7; l++ {
					if prop("rocksdb.num-files-at-level"+string(rune('0'+l))) != "0" {
						levels++
					}
				}
				if levels != 1 {
					t.Errorf("files on %d levels after the build, want 1", levels)
				}
				fr := db.Begin()
				if _, ok, err := fr.Account(accts[17].AddrHash); err != nil || !ok {
					t.Fatalf("Account after the build: %v, %v", ok, err)
				}
			})
		}
	}
}

// TestLoaderFilesGoToTheBottom: a StateLoader's batches, ingested as they
// fill, go to the bottom level as they are, in both layouts, and so do a
// copy's (walked or rebuilt, checkpointing every few batches), the commit's
// included: IDs are handed out in the order vertices are finished, so each
// batch's records lie above the batches before it, and the one record below
// them, the root's, is written alone with the commit. Nothing is compacted.
// (When a v2 branch took its slots as it opened, every batch overlapped all
// the ones before it, went to level 0 and was compacted with them: the
// store was rewritten several times over while it was built; then, with
// those records held back to the commit, once.) The final compaction is
// left out here; what the load's writes made RocksDB compact is measured.
func TestLoaderFilesGoToTheBottom(t *testing.T) {
	accts := trietest.StateAccounts(200_000, 3) // ~5 batches of records
	for _, f := range trietest.Formats {
		src, err := trie.Open(trie.NewMemoryBackend(), &trie.Options{Format: f})
		trietest.Must(t, err, "trie.Open")
		trietest.LoadState(t, src, accts, 0)
		for _, how := range []string{"loader", "walk", "rebuild"} {
			t.Run(f.String()+"/"+how, func(t *testing.T) {
				st, err := rocks.Open(t.TempDir(), &rocks.Options{IngestBytes: 1, Statistics: true})
				trietest.Must(t, err, "rocks.Open")
				db, err := trie.Open(hideCompactor{st}, &trie.Options{Format: f})
				trietest.Must(t, err, "trie.Open")
				defer db.Close()
				checkpoints := 0
				switch how {
				case "loader":
					trietest.LoadState(t, db, accts, 0)
				default:
					method := trie.CopyWalk
					if how == "rebuild" {
						method = trie.CopyRebuild
					}
					_, err := db.CopyFrom(context.Background(), src, trie.CopyOptions{Method: method, CheckpointRecords: 100_000,
						Checkpoint: func([]byte, trie.CopyProgress) error { checkpoints++; return nil }})
					trietest.Must(t, err, "CopyFrom")
					if checkpoints < 2 {
						t.Fatalf("%d checkpoints", checkpoints)
					}
				}
				trietest.Must(t, st.Flush(), "Flush")
				stats, err := st.Statistics()
				trietest.Must(t, err, "Statistics")
				sst, err := st.Property("rocksdb.total-sst-files-size") // of the vertex family
				trietest.Must(t, err, "Property")
				size, _ := strconv.ParseUint(sst, 10, 64)
				l0, _ := st.Property("rocksdb.num-files-at-level0")
				w := stats["rocksdb.compact.write.bytes"]
				t.Logf("compacted %d bytes, %d bytes of files, %s at level 0, %d checkpoints", w, size, l0, checkpoints)
				if l0 != "0" || w != 0 {
					t.Errorf("after the load %s vertex files at level 0, %d bytes compacted for %d bytes of files", l0, w, size)
				}
			})
		}
		trietest.Must(t, src.Close(), "Close")
	}
}

// TestLoadFilesCompressedFast: a load's files, ingested at the bottom level,
// are compressed at ZSTD's fast level by default and at the bottom level's
// own with Options.FullLoadCompression, which makes the same state's vertex
// files smaller; the build's final compaction leaves them as they are.
func TestLoadFilesCompressedFast(t *testing.T) {
	accts := trietest.StateAccounts(50_000, 3)
	size := func(full bool) uint64 {
		st, err := rocks.Open(t.TempDir(), &rocks.Options{FullLoadCompression: full})
		trietest.Must(t, err, "rocks.Open")
		db, err := trie.Open(st, &trie.Options{Format: vertex.FormatV2})
		trietest.Must(t, err, "trie.Open")
		defer db.Close()
		trietest.LoadState(t, db, accts, 0)
		sst, err := st.Property("rocksdb.total-sst-files-size") // of the vertex family
		trietest.Must(t, err, "Property")
		n, err := strconv.ParseUint(sst, 10, 64)
		trietest.Must(t, err, "total-sst-files-size %q", sst)
		return n
	}
	fast, full := size(false), size(true)
	t.Logf("vertex files: %d bytes fast, %d bytes with FullLoadCompression", fast, full)
	if fast <= full {
		t.Errorf("vertex files of %d bytes compressed fast, not more than the %d bytes of FullLoadCompression", fast, full)
	}
}

// hideCompactor hides rocks.Store's Compact from trie, so a build leaves the
// store as its writes left it.
type hideCompactor struct{ trie.Backend }

// BenchmarkBuildCompaction times a StateLoader build of 200k accounts that
// compacts the store before Commit returns against one that does not, in
// both layouts, and reports the store's level-0 files and SST bytes after
// each (docs/benchmarks.md §11).
func BenchmarkBuildCompaction(b *testing.B) {
	accts := trietest.StateAccounts(200_000, 5)
	for _, f := range trietest.Formats {
		for _, compact := range []bool{true, false} {
			b.Run(fmt.Sprintf("%v/compact=%v", f, compact), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					// 1 MiB memtables: the build outgrows them, as a real one does.
					st, err := rocks.Open(b.TempDir(), &rocks.Options{WriteBufferBytes: 1 << 20})
					trietest.Must(b, err, "rocks.Open")
					var be trie.Backend = st
					if !compact {
						be = hideCompactor{st}
					}
					db, err := trie.Open(be, &trie.Options{Format: f})
					trietest.Must(b, err, "trie.Open")
					trietest.LoadState(b, db, accts, 0)
					b.StopTimer()
					l0, _ := st.Property("rocksdb.num-files-at-level0")
					sst, _ := st.Property("rocksdb.total-sst-files-size")
					n0, _ := strconv.Atoi(l0)
					bytes, _ := strconv.Atoi(sst)
					b.ReportMetric(float64(n0), "L0-files")
					b.ReportMetric(float64(bytes)/(1<<20), "SST-MiB")
					db.Close()
					b.StartTimer()
				}
			})
		}
	}
}
