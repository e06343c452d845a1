package rocks

import (
	"crypto/sha256"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/hexstate/hexstate/vertex"
)

// testOptions keeps test stores small.
func testOptions() *Options {
	return &Options{BlockCacheBytes: 8 << 20, WriteBufferBytes: 1 << 20, BackgroundJobs: 2}
}

func mustOpen(t *testing.T, dir string, o *Options) *Store {
	t.Helper()
	if o == nil {
		o = testOptions()
	}
	s, err := Open(dir, o)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mustWrite(t *testing.T, s *Store, b *vertex.Batch) {
	t.Helper()
	if err := s.Write(b); err != nil {
		t.Fatalf("Write: %v", err)
	}
}

func wantVertex(t *testing.T, s *Store, id vertex.ID, want string) {
	t.Helper()
	got, err := s.Vertex(id)
	if err != nil {
		t.Fatalf("Vertex(%d): %v", id, err)
	}
	if want == "" {
		if got != nil {
			t.Fatalf("Vertex(%d) = %q, want absent", id, got)
		}
		return
	}
	if string(got) != want {
		t.Fatalf("Vertex(%d) = %q, want %q", id, got, want)
	}
}

// fileState is what snapshot records of one path.
type fileState struct {
	mode  fs.FileMode
	size  int64
	mtime int64
	sum   [32]byte
}

// snapshot records every path under root (names, modes, sizes, mtimes,
// contents), to check that a refused Open changed nothing.
func snapshot(t *testing.T, root string) map[string]fileState {
	t.Helper()
	m := map[string]fileState{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		st := fileState{mode: fi.Mode(), size: fi.Size(), mtime: fi.ModTime().UnixNano()}
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			st.sum = sha256.Sum256(b)
		}
		m[p] = st
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sameSnapshot(t *testing.T, before, after map[string]fileState) {
	t.Helper()
	for p, b := range before {
		a, ok := after[p]
		if !ok {
			t.Errorf("%s was removed", p)
		} else if a != b {
			t.Errorf("%s changed: %+v -> %+v", p, b, a)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s was created", p)
		}
	}
}
