package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"strings"
	"testing"

	"github.com/hexstate/hexstate/internal/trietest"
	"github.com/hexstate/hexstate/migrate"
	"github.com/hexstate/hexstate/rocks"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// envMain makes the test binary run the command itself (main) with the
// arguments after "--": the kill test and the benchmark start it so.
const envMain = "HEXSTATE_MIGRATE_MAIN"

// envCPUProfile, in the environment of a command started so, names the file
// it writes a CPU profile of its run to (the benchmark's
// HEXSTATE_MIGRATE_PROFILE).
const envCPUProfile = "HEXSTATE_MIGRATE_CPUPROFILE"

func TestMain(m *testing.M) {
	if os.Getenv(envMain) == "1" {
		for i, a := range os.Args {
			if a == "--" {
				os.Args = append([]string{"trie-migrate"}, os.Args[i+1:]...)
				break
			}
		}
		if p := os.Getenv(envCPUProfile); p != "" {
			f, err := os.Create(p)
			if err == nil {
				err = pprof.StartCPUProfile(f)
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "cpu profile:", err)
				os.Exit(1)
			}
		}
		main()
		pprof.StopCPUProfile()
		// Linux carries ru_maxrss over fork and exec, so a parent's peak would
		// show as the child's: VmHWM is this process's own.
		if st, err := os.ReadFile("/proc/self/status"); err == nil {
			if m := regexp.MustCompile(`VmHWM:\s+(\d+) kB`).FindSubmatch(st); m != nil {
				fmt.Fprintf(os.Stderr, "peak RSS %s KiB\n", m[1])
			}
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// command returns the command trie-migrate args, run by this test binary.
func command(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), envMain+"=1")
	return cmd
}

// makeStore writes accts into a new RocksDB store of format f in dir.
func makeStore(t testing.TB, dir string, f vertex.Format, accts []trie.AccountLeaf) {
	t.Helper()
	store, err := rocks.Open(dir, nil)
	trietest.Must(t, err, "rocks.Open")
	db, err := trie.Open(store, &trie.Options{Format: f})
	trietest.Must(t, err, "trie.Open")
	trietest.LoadState(t, db, accts, 77)
	trietest.Must(t, db.Close(), "Close")
}

// growStore makes a v1 RocksDB store in dir grown by inserting accts in a
// random order (seed), persisting every every accounts: its IDs are
// scattered, as a block-by-block sync leaves them.
func growStore(t testing.TB, dir string, accts []trie.AccountLeaf, every int, seed int64) {
	t.Helper()
	store, err := rocks.Open(dir, nil)
	trietest.Must(t, err, "rocks.Open")
	db, err := trie.Open(store, &trie.Options{Format: vertex.FormatV1})
	trietest.Must(t, err, "trie.Open")
	trietest.GrowState(t, db, accts, every, seed)
	trietest.Must(t, db.Close(), "Close")
}

// treeHash hashes every name, mode and content under dir.
func treeHash(t testing.TB, dir string) [32]byte {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %v %d\n", p, fi.Mode(), fi.Size())
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(b)
		}
		return nil
	})
	trietest.Must(t, err, "WalkDir")
	return [32]byte(h.Sum(nil))
}

// TestRefusals runs each refused migration and finds the directories byte
// for byte as they were.
func TestRefusals(t *testing.T) {
	d := t.TempDir()
	accts := trietest.StateAccounts(300, 1)
	makeStore(t, d+"/db", vertex.FormatV1, accts)
	makeStore(t, d+"/v2db", vertex.FormatV2, accts)
	makeStore(t, d+"/outer/db", vertex.FormatV1, accts)
	trietest.Must(t, os.Mkdir(d+"/empty", 0o755), "Mkdir")
	trietest.Must(t, os.Mkdir(d+"/db.v1.bak", 0o755), "Mkdir")
	trietest.Must(t, os.Mkdir(d+"/junk", 0o755), "Mkdir")
	trietest.Must(t, os.WriteFile(d+"/junk/notes.txt", []byte("mine"), 0o644), "WriteFile")
	cases := []struct {
		name string
		cfg  config
		want error
	}{
		{"missing source", config{to: vertex.FormatV2, src: d + "/nothing"}, ErrNotDatabase},
		{"empty source", config{to: vertex.FormatV2, src: d + "/empty"}, ErrNotDatabase},
		{"empty source to v1", config{to: vertex.FormatV1, src: d + "/empty", dst: d + "/e2"}, ErrNotDatabase},
		{"same format", config{to: vertex.FormatV2, src: d + "/v2db"}, nil},
		{"target inside source", config{to: vertex.FormatV2, src: d + "/db", dst: d + "/db/sub"}, migrate.ErrNested},
		{"target is source", config{to: vertex.FormatV2, src: d + "/db", dst: d + "/db/"}, migrate.ErrNested},
		{"source inside target", config{to: vertex.FormatV2, src: d + "/outer/db", dst: d + "/outer"}, migrate.ErrNested},
		{"backup exists", config{to: vertex.FormatV2, src: d + "/db", replace: true}, migrate.ErrBackupExists},
		{"target not empty", config{to: vertex.FormatV2, src: d + "/db", dst: d + "/junk"}, migrate.ErrTargetNotEmpty},
		{"target holds a database", config{to: vertex.FormatV2, src: d + "/db", dst: d + "/v2db"}, migrate.ErrTargetNotEmpty},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := treeHash(t, d)
			cfg := c.cfg
			cfg.cacheMiB = 8
			err := run(context.Background(), &cfg)
			if err == nil || (c.want != nil && !errors.Is(err, c.want)) {
				t.Fatalf("%v, want %v", err, c.want)
			}
			if treeHash(t, d) != before {
				t.Fatalf("refused run (%v) changed the directories", err)
			}
		})
	}
}

// TestPreloadFlag migrates a source grown by frames (scattered IDs): by
// default it is preloaded; with -preload 0 it is rebuilt from its leaf
// index, or with -method walk read ahead vertex by vertex; every run
// verifies.
func TestPreloadFlag(t *testing.T) {
	d := t.TempDir()
	growStore(t, d+"/db", trietest.StateAccounts(3000, 6), 500, 7)
	for i, c := range []struct{ preload, method, want string }{{"128", "auto", "preloaded: "}, {"0", "auto", "rebuilt: "}, {"0", "walk", "read ahead: "}} {
		out, err := command("-preload", c.preload, "-method", c.method, "-samples", "50", d+"/db", fmt.Sprintf("%s/db.v2.%d", d, i)).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "verified") || !strings.Contains(string(out), c.want) {
			t.Fatalf("-preload %s -method %s: %v, want a line %q:\n%s", c.preload, c.method, err, c.want, out)
		}
	}
	if out, err := command("-method", "copy", d+"/db", d+"/db.v2.x").CombinedOutput(); err == nil || !strings.Contains(string(out), "unknown method") {
		t.Fatalf("-method copy: %v\n%s", err, out)
	}
}

// TestReplace migrates with -replace and finds the new format under the
// old name and the old database as the backup.
func TestReplace(t *testing.T) {
	d := t.TempDir()
	accts := trietest.StateAccounts(500, 2)
	makeStore(t, d+"/db", vertex.FormatV1, accts)
	cfg := config{to: vertex.FormatV2, src: d + "/db", replace: true, cacheMiB: 8, samples: 50}
	trietest.Must(t, run(context.Background(), &cfg), "run")
	for dir, f := range map[string]vertex.Format{d + "/db": vertex.FormatV2, d + "/db.v1.bak": vertex.FormatV1} {
		store, err := rocks.Open(dir, &rocks.Options{ReadOnly: true})
		trietest.Must(t, err, "open %s", dir)
		db, err := trie.Open(store, &trie.Options{Format: f})
		trietest.Must(t, err, "trie.Open %s", dir)
		db.Close()
	}
}

// TestReplaceFinishes: a -replace stopped between its renames (the source
// moved to its backup, the finished copy not yet in its place) is finished
// by the same command run again.
func TestReplaceFinishes(t *testing.T) {
	d := t.TempDir()
	accts := trietest.StateAccounts(300, 5)
	makeStore(t, d+"/db", vertex.FormatV1, accts)
	cfg := config{to: vertex.FormatV2, src: d + "/db", cacheMiB: 8, samples: 50}
	trietest.Must(t, run(context.Background(), &cfg), "run")
	trietest.Must(t, os.Rename(d+"/db", d+"/db.v1.bak"), "the first rename")
	cfg.replace = true
	trietest.Must(t, run(context.Background(), &cfg), "run again")
	store, err := rocks.Open(d+"/db", &rocks.Options{ReadOnly: true})
	trietest.Must(t, err, "open the replaced database")
	db, err := trie.Open(store, &trie.Options{Format: vertex.FormatV2})
	trietest.Must(t, err, "trie.Open")
	db.Close()
	if _, err := os.Stat(d + "/db.v2"); !os.IsNotExist(err) {
		t.Fatalf("the migrated copy is still at db.v2: %v", err)
	}
}

// TestRecordVariants converts a v2 store from keys once to children's keys
// and back (-records) within its layout: the round trip gives the source's
// records byte for byte, and a run that would change nothing is refused.
func TestRecordVariants(t *testing.T) {
	d := t.TempDir()
	accts := trietest.StateAccounts(800, 4)
	makeStore(t, d+"/db", vertex.FormatV2, accts)
	same := config{to: vertex.FormatV2, src: d + "/db", cacheMiB: 8, samples: 50}
	if err := run(context.Background(), &same); err == nil {
		t.Fatal("a migration to the source's own format and variant was not refused")
	}
	for _, step := range []struct {
		src, dst string
		recs     vertex.Records
	}{{d + "/db", d + "/copies", vertex.ChildKeyCopies}, {d + "/copies", d + "/once", vertex.KeysOnce}} {
		cfg := config{to: vertex.FormatV2, records: step.recs, src: step.src, dst: step.dst, cacheMiB: 8, samples: 50}
		trietest.Must(t, run(context.Background(), &cfg), "run %s -> %s", step.src, step.dst)
		store, err := rocks.Open(step.dst, &rocks.Options{ReadOnly: true})
		trietest.Must(t, err, "open %s", step.dst)
		db, err := trie.Open(store, nil)
		trietest.Must(t, err, "trie.Open %s", step.dst)
		if db.Records() != step.recs {
			t.Fatalf("%s has %v records, want %v", step.dst, db.Records(), step.recs)
		}
		db.Close()
	}
	open := func(dir string) trie.Backend {
		store, err := rocks.Open(dir, &rocks.Options{ReadOnly: true})
		trietest.Must(t, err, "open %s", dir)
		t.Cleanup(func() { store.Close() })
		return store
	}
	trietest.SameRecords(t, open(d+"/once"), open(d+"/db"))
}

// TestJournalPending journals two blocks above a source's persisted state
// and finds the migration refused before anything is written (the copy
// takes the persisted state only, so they would be lost), the directories
// byte for byte as they were; once the client has persisted them, the same
// command migrates.
func TestJournalPending(t *testing.T) {
	d := t.TempDir()
	accts := trietest.StateAccounts(300, 2)
	makeStore(t, d+"/db", vertex.FormatV1, accts)
	open := func() *trie.DB {
		store, err := rocks.Open(d+"/db", nil)
		trietest.Must(t, err, "rocks.Open")
		db, err := trie.Open(store, &trie.Options{Format: vertex.FormatV1})
		trietest.Must(t, err, "trie.Open")
		return db
	}
	db := open()
	fr := db.Begin()
	for block := db.Block() + 1; block <= db.Block()+2; block++ {
		trietest.Must(t, fr.UpdateAccount(accts[block].AddrHash, trie.Account{Nonce: 1000 + block}), "UpdateAccount")
		trietest.Must(t, db.Journal(fr, block), "Journal")
		fr = fr.Begin()
	}
	trietest.Must(t, db.Close(), "Close")

	before := treeHash(t, d)
	cfg := config{to: vertex.FormatV2, src: d + "/db", cacheMiB: 8, samples: 20}
	if err := run(context.Background(), &cfg); !errors.Is(err, ErrJournalPending) || !strings.Contains(err.Error(), "2 journalled frames") {
		t.Fatalf("%v, want ErrJournalPending naming 2 frames", err)
	}
	if treeHash(t, d) != before {
		t.Fatal("the refused run changed the directories")
	}

	db = open()
	rec := db.Recovered()
	if len(rec) != 2 {
		t.Fatalf("%d frames recovered, want 2", len(rec))
	}
	last := rec[len(rec)-1]
	trietest.Must(t, db.Persist(last.Frame, last.Block), "Persist")
	trietest.Must(t, db.Close(), "Close")
	cfg = config{to: vertex.FormatV2, src: d + "/db", cacheMiB: 8, samples: 20}
	trietest.Must(t, run(context.Background(), &cfg), "migrating the persisted source")
}
