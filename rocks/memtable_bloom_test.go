package rocks

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/hexstate/hexstate/vertex"
)

// TestMemtableBloom: every column family is opened with a whole-key Bloom
// filter in its memtables (as RocksDB's OPTIONS file records them), and
// lookups of records still in a memtable, present and absent, and of a
// deleted one, answer as without it.
func TestMemtableBloom(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, nil)
	var b vertex.Batch
	for id := vertex.ID(1); id <= 2000; id += 2 {
		b.Puts = append(b.Puts, vertex.Record{ID: id, Rec: []byte{byte(id), byte(id >> 8)}})
	}
	mustWrite(t, s, &b)
	mustWrite(t, s, &vertex.Batch{Deletes: []vertex.ID{501}})
	for id := vertex.ID(1); id <= 2001; id++ {
		switch {
		case id == 501 || id%2 == 0 || id > 2000:
			wantVertex(t, s, id, "")
		default:
			wantVertex(t, s, id, string([]byte{byte(id), byte(id >> 8)}))
		}
	}

	files, err := filepath.Glob(filepath.Join(dir, "OPTIONS-*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no OPTIONS file in %s (%v)", dir, err)
	}
	opts, err := os.ReadFile(files[len(files)-1])
	if err != nil {
		t.Fatal(err)
	}
	families := len(regexp.MustCompile(`(?m)^\[CFOptions `).FindAll(opts, -1))
	whole := len(regexp.MustCompile(`(?m)^\s*memtable_whole_key_filtering=true$`).FindAll(opts, -1))
	ratio := len(regexp.MustCompile(`(?m)^\s*memtable_prefix_bloom_size_ratio=0\.1\d*$`).FindAll(opts, -1))
	if families < 2 || whole != families || ratio != families {
		t.Fatalf("OPTIONS: %d column families, %d with whole-key memtable filtering, %d with a bloom ratio of 0.1", families, whole, ratio)
	}
}
