package rocks_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hexstate/hexstate/internal/trietest"

	"github.com/linxGnu/grocksdb"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/rocks"
	"github.com/hexstate/hexstate/trie"
)

// TestRocksBadPaths opens paths that do not hold a store and checks the typed
// errors, and that nothing was changed or created.
func TestRocksBadPaths(t *testing.T) {
	t.Run("regular file", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "state")
		trietest.Must(t, os.WriteFile(p, []byte("not a database"), 0o644), "WriteFile")
		st, err := rocks.Open(p, nil)
		if err == nil {
			st.Close()
			t.Fatal("rocks.Open of a regular file succeeded")
		}
		var oe *rocks.OpenError
		if !errors.Is(err, rocks.ErrNotDirectory) || !errors.As(err, &oe) {
			t.Fatalf("rocks.Open of a regular file: %v, want ErrNotDirectory in an *OpenError", err)
		}
		if b, _ := os.ReadFile(p); string(b) != "not a database" {
			t.Fatalf("the file was changed: %q", b)
		}
	})
	t.Run("non-rocksdb dir", func(t *testing.T) {
		dir := t.TempDir()
		trietest.Must(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("keep me"), 0o644), "WriteFile")
		trietest.Must(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755), "Mkdir")
		before := biListing(t, dir)
		st, err := rocks.Open(dir, nil)
		if err == nil {
			st.Close()
			t.Fatal("rocks.Open of a non-RocksDB directory succeeded")
		}
		var oe *rocks.OpenError
		if !errors.Is(err, rocks.ErrNotRocksDB) || !errors.As(err, &oe) {
			t.Fatalf("rocks.Open of a non-RocksDB directory: %v, want ErrNotRocksDB in an *OpenError", err)
		}
		if after := biListing(t, dir); after != before {
			t.Fatalf("the directory changed:\n%s\n->\n%s", before, after)
		}
	})
	t.Run("bogus CURRENT", func(t *testing.T) {
		dir := t.TempDir()
		trietest.Must(t, os.WriteFile(filepath.Join(dir, "CURRENT"), []byte("MANIFEST-000042\n"), 0o644), "WriteFile")
		before := biListing(t, dir)
		st, err := rocks.Open(dir, nil)
		if err == nil {
			st.Close()
			t.Fatal("rocks.Open of a broken RocksDB directory succeeded")
		}
		if !errors.Is(err, rocks.ErrNotRocksDB) {
			t.Fatalf("rocks.Open of a broken RocksDB directory: %v, want ErrNotRocksDB", err)
		}
		if after := biListing(t, dir); after != before {
			t.Fatalf("the directory changed:\n%s\n->\n%s", before, after)
		}
	})
	t.Run("locked", func(t *testing.T) {
		dir := t.TempDir()
		st, err := rocks.Open(dir, nil)
		trietest.Must(t, err, "rocks.Open")
		defer st.Close()
		st2, err := rocks.Open(dir, nil)
		if err == nil {
			st2.Close()
			t.Fatal("a store opened twice")
		}
		if !errors.Is(err, rocks.ErrLocked) {
			t.Fatalf("second rocks.Open: %v, want ErrLocked", err)
		}
	})
}

// biListing describes every file under dir: name, size and content hash.
func biListing(t *testing.T, dir string) string {
	t.Helper()
	var out bytes.Buffer
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		h := hashkey.Hash{}
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h = hashkey.Keccak256(b)
		}
		rel, _ := filepath.Rel(dir, p)
		out.WriteString(rel + " " + fi.Mode().String() + " " + h.String()[:18] + "\n")
		return nil
	})
	trietest.Must(t, err, "walking %s", dir)
	return out.String()
}

// TestRocksOpenAfterCreationCutShort covers the two windows in which a process
// killed inside rocks.Open's creation of a store used to leave a directory that
// no later Open accepted (found by TestCrash): before RocksDB wrote CURRENT
// (only LOCK, IDENTITY, LOG and the first MANIFEST/OPTIONS files, maybe as
// .dbtmp), and after CURRENT but before the "vertices" column family existed
// (a RocksDB database with only the default column family, empty). Both must
// open as a new store; a read-only open must say there is no database; a
// default-only database that holds anything stays refused and untouched.
func TestRocksOpenAfterCreationCutShort(t *testing.T) {
	useStore := func(t *testing.T, dir string) {
		t.Helper()
		st, err := rocks.Open(dir, nil)
		trietest.Must(t, err, "rocks.Open after a creation cut short")
		db, err := trie.Open(st, nil)
		trietest.Must(t, err, "trie.Open")
		fr := db.Begin()
		trietest.Must(t, trietest.G(fr).Put([]byte("k"), []byte("v")), "Put")
		trietest.Must(t, db.Persist(fr, 1), "Persist")
		trietest.Must(t, db.Close(), "Close")
		st, err = rocks.Open(dir, nil)
		trietest.Must(t, err, "rocks.Open after the first persist")
		db, err = trie.Open(st, nil)
		trietest.Must(t, err, "trie.Open")
		defer db.Close()
		if v, err := trietest.G(db.Begin()).Get([]byte("k")); err != nil || string(v) != "v" {
			t.Fatalf("Get = %q, %v", v, err)
		}
	}
	readOnlyRefused := func(t *testing.T, dir string) {
		t.Helper()
		before := biListing(t, dir)
		st, err := rocks.Open(dir, &rocks.Options{ReadOnly: true})
		if err == nil {
			st.Close()
			t.Fatal("read-only Open of a creation cut short succeeded")
		}
		if !errors.Is(err, rocks.ErrNoDatabase) {
			t.Errorf("read-only Open: %v, want ErrNoDatabase", err)
		}
		if after := biListing(t, dir); after != before {
			t.Errorf("read-only Open changed the directory")
		}
	}
	for name, files := range map[string][]string{
		"before CURRENT":            {"LOCK", "IDENTITY", "LOG"},
		"before CURRENT, tmp":       {"LOCK", "IDENTITY", "LOG", "000001.dbtmp"},
		"before CURRENT, manifest":  {"LOCK", "IDENTITY", "LOG", "LOG.old.1700000000000000", "MANIFEST-000001", "OPTIONS-000005.dbtmp"},
		"not leftovers: sst":        {"LOCK", "IDENTITY", "000009.sst"},
		"not leftovers: wal":        {"LOCK", "IDENTITY", "000004.log"},
		"not leftovers: other file": {"LOCK", "IDENTITY", "notes.txt"},
		"before CURRENT, LOG only":  {"LOG"},
		"not leftovers: directory":  {"LOG", "archive/"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range files {
				if strings.HasSuffix(f, "/") {
					trietest.Must(t, os.Mkdir(filepath.Join(dir, f), 0o755), "Mkdir")
					continue
				}
				content := ""
				switch {
				case f == "IDENTITY":
					content = "0b0f6a8e-7c1e-4d5e-9a51-3f5f0e8f1c2d\n"
				case strings.HasSuffix(f, ".dbtmp"):
					content = "MANIFEST-000001\n"
				case strings.HasPrefix(f, "MANIFEST"):
					content = "\x00\x01partial"
				}
				trietest.Must(t, os.WriteFile(filepath.Join(dir, f), []byte(content), 0o644), "WriteFile")
			}
			if strings.HasPrefix(name, "not leftovers") {
				before := biListing(t, dir)
				st, err := rocks.Open(dir, nil)
				if err == nil {
					st.Close()
					t.Fatal("Open accepted a directory that is not a creation cut short")
				}
				if !errors.Is(err, rocks.ErrNotRocksDB) {
					t.Errorf("Open: %v, want ErrNotRocksDB", err)
				}
				if after := biListing(t, dir); after != before {
					t.Errorf("refused Open changed the directory")
				}
				return
			}
			readOnlyRefused(t, dir)
			useStore(t, dir)
		})
	}
	rawDB := func(t *testing.T, dir string, put bool) {
		o := grocksdb.NewDefaultOptions()
		defer o.Destroy()
		o.SetCreateIfMissing(true)
		db, err := grocksdb.OpenDb(o, dir)
		trietest.Must(t, err, "grocksdb.OpenDb")
		if put {
			wo := grocksdb.NewDefaultWriteOptions()
			trietest.Must(t, db.Put(wo, []byte("someone"), []byte("else")), "Put")
			wo.Destroy()
		}
		db.Close()
	}
	t.Run("default column family only", func(t *testing.T) {
		dir := t.TempDir()
		rawDB(t, dir, false)
		readOnlyRefused(t, dir)
		useStore(t, dir)
	})
	t.Run("default column family only, with data", func(t *testing.T) {
		dir := t.TempDir()
		rawDB(t, dir, true)
		before := biListing(t, dir)
		st, err := rocks.Open(dir, nil)
		if err == nil {
			st.Close()
			t.Fatal("Open accepted a foreign RocksDB database")
		}
		if !errors.Is(err, rocks.ErrForeignDB) {
			t.Errorf("Open: %v, want ErrForeignDB", err)
		}
		if after := biListing(t, dir); after != before {
			t.Errorf("refused Open changed the directory")
		}
	})
}
