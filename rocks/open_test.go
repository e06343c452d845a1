package rocks

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hexstate/hexstate/vertex"
	"github.com/linxGnu/grocksdb"
)

// makeRawDB creates a RocksDB database in dir with the column families cfs
// (cfs[0] must be "default") and puts puts[i] into cfs[i], the way some other
// program would.
func makeRawDB(t *testing.T, dir string, cfs []string, puts []map[string]string) {
	t.Helper()
	o := grocksdb.NewDefaultOptions()
	defer o.Destroy()
	o.SetCreateIfMissing(true)
	o.SetCreateIfMissingColumnFamilies(true)
	cfOpts := make([]*grocksdb.Options, len(cfs))
	for i := range cfOpts {
		cfOpts[i] = o
	}
	db, hs, err := grocksdb.OpenDbColumnFamilies(o, dir, cfs, cfOpts)
	if err != nil {
		t.Fatal(err)
	}
	wo := grocksdb.NewDefaultWriteOptions()
	defer wo.Destroy()
	for i, m := range puts {
		for k, v := range m {
			if err := db.PutCF(wo, hs[i], []byte(k), []byte(v)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, h := range hs {
		h.Destroy()
	}
	db.Close()
}

// wantOpenError checks that Open(dir) fails with kind, as an *OpenError naming
// dir, and that it changed nothing under root.
func wantOpenError(t *testing.T, root, dir string, o *Options, kind error) *OpenError {
	t.Helper()
	before := snapshot(t, root)
	s, err := Open(dir, o)
	if err == nil {
		s.Close()
		t.Fatalf("Open(%s) succeeded, want %v", dir, kind)
	}
	if !errors.Is(err, kind) {
		t.Fatalf("Open(%s) = %v, want %v", dir, err, kind)
	}
	var oe *OpenError
	if !errors.As(err, &oe) || oe.Path == "" || oe.Found == "" || oe.Hint == "" {
		t.Fatalf("Open(%s) error %#v is not a complete *OpenError", dir, err)
	}
	t.Logf("%v", err)
	sameSnapshot(t, before, snapshot(t, root))
	return oe
}

func TestOpenCreatesInEmptyDir(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, nil)
	mustWrite(t, s, &vertex.Batch{Admin: []byte("a")})
	if _, err := os.Stat(filepath.Join(dir, "CURRENT")); err != nil {
		t.Fatal(err)
	}
}

func TestOpenRegularFile(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "file")
	if err := os.WriteFile(p, []byte("not a database"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantOpenError(t, root, p, nil, ErrNotDirectory)
	// A path below a regular file cannot be created either, and nothing changes.
	before := snapshot(t, root)
	if _, err := Open(filepath.Join(p, "sub"), nil); err == nil {
		t.Fatal("Open below a regular file succeeded")
	}
	sameSnapshot(t, before, snapshot(t, root))
}

func TestOpenNonEmptyNonRocksDir(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	oe := wantOpenError(t, root, root, nil, ErrNotRocksDB)
	if !strings.Contains(oe.Error(), "notes.txt") {
		t.Errorf("message does not say what was found: %v", oe)
	}
}

func TestOpenCorruptCurrent(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "CURRENT"), []byte("MANIFEST-000099\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantOpenError(t, root, root, nil, ErrNotRocksDB)
}

func TestOpenForeignRocksDB(t *testing.T) {
	t.Run("default CF only", func(t *testing.T) {
		root := t.TempDir()
		makeRawDB(t, root, []string{"default"}, []map[string]string{{"k": "v"}})
		wantOpenError(t, root, root, nil, ErrForeignDB)
	})
	t.Run("other CFs", func(t *testing.T) {
		root := t.TempDir()
		makeRawDB(t, root, []string{"default", "vertices", "extra"}, nil)
		wantOpenError(t, root, root, nil, ErrForeignDB)
	})
	t.Run("our CFs with data, no marker", func(t *testing.T) {
		root := t.TempDir()
		makeRawDB(t, root, []string{"default", "vertices"}, []map[string]string{{"x": "y"}, {"12345678": "v"}})
		wantOpenError(t, root, root, nil, ErrForeignDB)
		o := testOptions()
		o.ReadOnly = true
		wantOpenError(t, root, root, o, ErrForeignDB)
	})
	t.Run("wrong marker", func(t *testing.T) {
		root := t.TempDir()
		makeRawDB(t, root, []string{"default", "vertices"}, []map[string]string{{"hexstate": "something"}})
		wantOpenError(t, root, root, nil, ErrForeignDB)
	})
}

func TestOpenUnknownStoreVersion(t *testing.T) {
	root := t.TempDir()
	future := string(markerMagic[:]) + "\x00\x00\x00\x63"
	makeRawDB(t, root, []string{"default", "vertices"}, []map[string]string{{"hexstate": future}})
	wantOpenError(t, root, root, nil, ErrStoreVersion)
}

func TestOpenFinishesInterruptedCreation(t *testing.T) {
	dir := t.TempDir()
	makeRawDB(t, dir, []string{"default", "vertices"}, nil) // crash before the marker
	s := mustOpen(t, dir, nil)
	mustWrite(t, s, &vertex.Batch{Puts: []vertex.Record{{ID: 2, Rec: []byte("x")}}})
	s.Close()
	s = mustOpen(t, dir, nil) // now with marker and data
	wantVertex(t, s, 2, "x")
}

func TestOpenLockedInProcess(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, nil)
	_, err := Open(dir, testOptions())
	var oe *OpenError
	if !errors.Is(err, ErrLocked) || !errors.As(err, &oe) {
		t.Fatalf("second Open = %v, want ErrLocked", err)
	}
	t.Log(err)
	s.Close()
	s2 := mustOpen(t, dir, nil) // released by Close
	s2.Close()
}

// TestHelperHoldStore is not a test: run by TestOpenLockedByOtherProcess in a
// child process, it holds a store open until its stdin closes.
func TestHelperHoldStore(t *testing.T) {
	dir := os.Getenv("HEXSTATE_ROCKS_HOLD")
	if dir == "" {
		t.Skip("helper process only")
	}
	s, err := Open(dir, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	os.Stdout.WriteString("\nready\n")
	bufio.NewReader(os.Stdin).ReadString('\n')
}

func TestOpenLockedByOtherProcess(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHoldStore$")
	cmd.Env = append(os.Environ(), "HEXSTATE_ROCKS_HOLD="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && sc.Text() != "ready" {
	}
	_, err = Open(dir, testOptions())
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("Open of a store held by another process = %v, want ErrLocked", err)
	}
	t.Log(err)
}

func TestOpenReadOnlyUnfinishedCreation(t *testing.T) {
	root := t.TempDir()
	makeRawDB(t, root, []string{"default", "vertices"}, nil)
	o := testOptions()
	o.ReadOnly = true
	wantOpenError(t, root, root, o, ErrNoDatabase)
}
