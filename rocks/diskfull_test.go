package rocks_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/internal/trietest"
	"github.com/hexstate/hexstate/rocks"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
	"github.com/holiman/uint256"
)

// Full disk: the store lives on a small tmpfs that a filler file fills up.
// The scenario runs in a child process (this test binary again), so that a
// RocksDB abort (SIGABRT, exit 134, or Go's exit 2 after a signal in cgo) is
// a test failure instead of the end of the test binary.

const (
	diskFullEnvDir  = "HEXSTATE_DISKFULL_DIR"
	diskFullAccount = 2000 // new accounts per block: about 1 MB of log per block
)

// mountTmpfs mounts a tmpfs of size bytes on a new directory and unmounts it
// at cleanup; it skips t where mounting is not permitted.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	mnt := filepath.Join(t.TempDir(), "tmpfs")
	trietest.Must(t, os.Mkdir(mnt, 0o755), "mkdir")
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount a %s tmpfs here (needs root and a sandbox that allows mount): %v", size, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(mnt, 0); err != nil {
			t.Errorf("unmount %s: %v", mnt, err)
		}
	})
	return mnt
}

// fill writes a filler file in dir that leaves about leave bytes available.
func fill(t testing.TB, dir string, leave int64) string {
	t.Helper()
	var st syscall.Statfs_t
	trietest.Must(t, syscall.Statfs(dir, &st), "statfs")
	n := int64(st.Bavail)*st.Bsize - leave
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	trietest.Must(t, err, "create filler")
	defer f.Close()
	if n > 0 {
		trietest.Must(t, syscall.Fallocate(int(f.Fd()), 0, 0, n), "fallocate filler")
	}
	return path
}

// diskFullOptions: 1 MiB memtables, so the default reserve is 16 MiB and the
// reserve file 4 MiB.
func diskFullOptions() *rocks.Options {
	return &rocks.Options{BlockCacheBytes: 4 << 20, WriteBufferBytes: 1 << 20, BackgroundJobs: 2}
}

// diskFullBlock adds block b's accounts to fr.
func diskFullBlock(t testing.TB, fr *trie.Frame, b uint64) {
	t.Helper()
	for i := 0; i < diskFullAccount; i++ {
		n := int(b)*diskFullAccount + i
		trietest.Must(t, fr.UpdateAccount(trietest.Addr(n), trietest.Acc(b, uint64(n))), "UpdateAccount(%d)", n)
	}
}

// TestDiskFullChild is the child process of TestDiskFull; it is skipped unless
// HEXSTATE_DISKFULL_DIR is set. On the tmpfs in that directory it persists
// blocks until Persist fails, checks the error, frees space, retries the same
// Persist, closes, and prints the block and root it persisted last.
func TestDiskFullChild(t *testing.T) {
	mnt := os.Getenv(diskFullEnvDir)
	if mnt == "" {
		t.Skip("the child process of TestDiskFull")
	}
	st, err := rocks.Open(filepath.Join(mnt, "db"), diskFullOptions())
	trietest.Must(t, err, "rocks.Open")
	db, err := trie.Open(st, nil)
	trietest.Must(t, err, "trie.Open")
	filler := fill(t, mnt, 24<<20)

	var b uint64
	for b = 1; ; b++ {
		if b > 100 {
			t.Fatalf("persisted 100 blocks of ~1 MB into 24 MiB without an error")
		}
		fr := db.Begin()
		diskFullBlock(t, fr, b)
		err = db.Persist(fr, b)
		if err == nil {
			continue
		}
		if !errors.Is(err, rocks.ErrNoSpace) {
			t.Fatalf("Persist(%d) on a full disk: %v, want ErrNoSpace", b, err)
		}
		var nse *rocks.NoSpaceError
		if !errors.As(err, &nse) || !nse.Refused {
			t.Fatalf("Persist(%d): %v: want a *NoSpaceError refused by the guard", b, err)
		}
		t.Logf("Persist(%d): %v", b, err)
		if b < 3 {
			t.Fatalf("the guard refused block %d: the test wants a few blocks persisted first", b)
		}
		if got := db.Block(); got != b-1 {
			t.Fatalf("after the failed Persist(%d) the DB is at block %d, want %d", b, got, b-1)
		}
		// Retrying without freeing space fails the same way and writes nothing.
		if err := db.Persist(fr, b); !errors.Is(err, rocks.ErrNoSpace) {
			t.Fatalf("Persist(%d) retried on a still full disk: %v, want ErrNoSpace", b, err)
		}
		trietest.Must(t, os.Remove(filler), "removing the filler")
		trietest.Must(t, db.Persist(fr, b), "Persist(%d) retried after freeing space", b)
		root := trietest.DBRoot(t, db)
		trietest.Must(t, db.Close(), "Close")
		fmt.Printf("persisted %d %x\n", b, root[:])
		return
	}
}

// runChild runs test of this binary as a child with env added and fails t
// if it did not exit normally with status 0 (an abort is a failure); it
// returns the child's output.
func runChild(t *testing.T, test string, env ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the child %s failed (%v; an exit status of 134 or 2 with SIGABRT is RocksDB aborting):\n%s", test, err, out)
	}
	return string(out)
}

// persistedLine finds "persisted <block> <root>" in a child's output.
func persistedLine(t *testing.T, out string) (uint64, hashkey.Hash) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		var b uint64
		var h []byte
		if _, err := fmt.Sscanf(line, "persisted %d %x", &b, &h); err == nil && len(h) == 32 {
			return b, hashkey.Hash(h)
		}
	}
	t.Fatalf("no \"persisted\" line in the child's output:\n%s", out)
	return 0, hashkey.Hash{}
}

// TestDiskFull: on a full disk Persist fails with ErrNoSpace, a retry after
// space was freed succeeds, Close does not abort, and the store reopens at
// the retried block with its root.
func TestDiskFull(t *testing.T) {
	if os.Getenv(diskFullEnvDir) != "" || os.Getenv(walEnvDir) != "" {
		t.Skip("in a child process")
	}
	mnt := mountTmpfs(t, "64m")
	out := runChild(t, "TestDiskFullChild", diskFullEnvDir+"="+mnt)
	block, root := persistedLine(t, out)
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "Persist(") {
			t.Logf("child: %s", strings.TrimSpace(line))
		}
	}

	st, err := rocks.Open(filepath.Join(mnt, "db"), diskFullOptions())
	trietest.Must(t, err, "reopening the store")
	db, err := trie.Open(st, nil)
	if err != nil {
		st.Close()
		t.Fatalf("trie.Open after the full disk: %v", err)
	}
	defer db.Close()
	if got := db.Block(); got != block {
		t.Fatalf("reopened at block %d, the child persisted %d last", got, block)
	}
	if got := trietest.DBRoot(t, db); got != root {
		t.Fatalf("reopened with root %v, the child persisted %v", got, root)
	}
	// Every block's accounts are there, and the store takes more blocks.
	fr := db.Begin()
	for b := uint64(1); b <= block; b++ {
		for _, i := range []int{0, diskFullAccount - 1} {
			n := int(b)*diskFullAccount + i
			got, ok, err := fr.Account(trietest.Addr(n))
			trietest.Must(t, err, "Account(%d)", n)
			if want := trietest.Acc(b, uint64(n)); !ok || got.Nonce != want.Nonce || got.Balance != want.Balance {
				t.Fatalf("account %d of block %d: %+v, want %+v", n, b, got, want)
			}
		}
	}
	diskFullBlock(t, fr, block+1)
	trietest.Must(t, db.Persist(fr, block+1), "Persist(%d) after reopening", block+1)
}

// TestDiskFullReserveFile: the reserve file is created by the first write,
// counted as available by the guard, released when the guard refuses a
// write, and created again once space is back.
func TestDiskFullReserveFile(t *testing.T) {
	if os.Getenv(diskFullEnvDir) != "" || os.Getenv(walEnvDir) != "" {
		t.Skip("in a child process")
	}
	mnt := mountTmpfs(t, "64m")
	dir := filepath.Join(mnt, "db")
	st, err := rocks.Open(dir, diskFullOptions())
	trietest.Must(t, err, "Open")
	defer st.Close()
	reserve := filepath.Join(dir, "HEXSTATE-RESERVE")
	small := &vertex.Batch{Puts: []vertex.Record{{ID: 100, Rec: []byte("x")}}}
	trietest.Must(t, st.Write(small), "Write")
	fi, err := os.Stat(reserve)
	trietest.Must(t, err, "the reserve file after the first write")
	if want := st.Options().ReserveBytes / 4; fi.Size() != want {
		t.Fatalf("reserve file of %d bytes, want %d", fi.Size(), want)
	}
	// Leave a little less than the reserve minus the reserve file: refused.
	filler := fill(t, mnt, st.Options().ReserveBytes-fi.Size()-(1<<20))
	err = st.Write(small)
	if !errors.Is(err, rocks.ErrNoSpace) {
		t.Fatalf("Write with less than the reserve available: %v, want ErrNoSpace", err)
	}
	if _, err := os.Stat(reserve); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the reserve file is still there after a refused write (%v)", err)
	}
	trietest.Must(t, os.Remove(filler), "removing the filler")
	trietest.Must(t, st.Write(small), "Write after freeing space")
	if _, err := os.Stat(reserve); err != nil {
		t.Fatalf("the reserve file was not created again: %v", err)
	}
}

// TestDiskFullMigrate runs the trie-migrate command with its target on a
// nearly full tmpfs: it must stop with a message about the full disk (not
// abort), and a rerun after space was freed must resume and finish with the
// source's root.
func TestDiskFullMigrate(t *testing.T) {
	if os.Getenv(diskFullEnvDir) != "" || os.Getenv(walEnvDir) != "" {
		t.Skip("in a child process")
	}
	if testing.Short() {
		t.Skip("builds trie-migrate and migrates 120,000 accounts; skipped with -short")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build trie-migrate: %v", err)
	}
	mnt := mountTmpfs(t, "400m")
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "trie-migrate")
	if out, err := exec.Command(gobin, "build", "-o", bin, "github.com/hexstate/hexstate/cmd/trie-migrate").CombinedOutput(); err != nil {
		t.Fatalf("go build trie-migrate: %v\n%s", err, out)
	}

	// A format-v1 source of 120,000 accounts, every 8th with storage.
	src := filepath.Join(tmp, "src")
	st, err := rocks.Open(src, diskFullOptions())
	trietest.Must(t, err, "rocks.Open(src)")
	sdb, err := trie.Open(st, &trie.Options{Format: vertex.FormatV1})
	trietest.Must(t, err, "trie.Open(src)")
	fr := sdb.Begin()
	for i := 0; i < 120_000; i++ {
		trietest.Must(t, fr.UpdateAccount(trietest.Addr(i), trietest.Acc(uint64(i), uint64(i)+1)), "UpdateAccount")
		for s := 0; i%8 == 0 && s < 4; s++ {
			trietest.Must(t, fr.UpdateStorage(trietest.Addr(i), trietest.Slot(s), uint256.NewInt(uint64(s+1))), "UpdateStorage")
		}
	}
	trietest.Must(t, sdb.Persist(fr, 42), "Persist(src)")
	want := trietest.DBRoot(t, sdb)
	trietest.Must(t, sdb.Close(), "Close(src)")

	// The target's store has the default options: a 256 MiB reserve. Leave
	// room for it and a few chunks.
	dst := filepath.Join(mnt, "dst")
	filler := fill(t, mnt, rocks.DefaultOptions().ReserveBytes+30<<20)
	migrate := func() (string, error) {
		cmd := exec.Command(bin, "-checkpoint", "20000", src, dst)
		out, err := cmd.CombinedOutput()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			t.Fatalf("trie-migrate died of %v:\n%s", ws.Signal(), out)
		}
		return string(out), err
	}
	out, err := migrate()
	if err == nil {
		t.Fatalf("trie-migrate succeeded on a full disk:\n%s", out)
	}
	if code := err.(*exec.ExitError).ExitCode(); code != 1 {
		t.Fatalf("trie-migrate on a full disk exited with %d (134 is RocksDB aborting), want 1:\n%s", code, out)
	}
	if !strings.Contains(out, "no space left on device") || !strings.Contains(out, "disk is full") {
		t.Fatalf("trie-migrate's message does not mention the full disk:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dst, "MIGRATION-IN-PROGRESS")); err != nil {
		t.Fatalf("no migration checkpoint after the first run (%v):\n%s", err, out)
	}
	t.Logf("first run:\n%s", out)

	trietest.Must(t, os.Remove(filler), "removing the filler")
	out, err = migrate()
	if err != nil {
		t.Fatalf("trie-migrate after freeing space: %v\n%s", err, out)
	}
	if !strings.Contains(out, "verified") {
		t.Fatalf("the rerun did not verify the migration:\n%s", out)
	}
	st, err = rocks.Open(dst, nil)
	trietest.Must(t, err, "rocks.Open(dst)")
	ddb, err := trie.Open(st, &trie.Options{Format: vertex.FormatV2})
	if err != nil {
		st.Close()
		t.Fatalf("trie.Open(dst): %v", err)
	}
	defer ddb.Close()
	if got := trietest.DBRoot(t, ddb); got != want || ddb.Block() != 42 {
		t.Fatalf("migrated store at block %d root %v, want block 42 root %v", ddb.Block(), got, want)
	}
}

// TestDiskFullIngest: a large sorted batch whose SST files do not fit (the
// guard disabled, so that the files' writer meets the full disk) fails with
// a refused *NoSpaceError, leaves no file of its own behind and nothing in
// the store, and the same Write succeeds once space is freed, also after a
// reopen.
func TestDiskFullIngest(t *testing.T) {
	if os.Getenv(diskFullEnvDir) != "" || os.Getenv(walEnvDir) != "" {
		t.Skip("in a child process")
	}
	mnt := mountTmpfs(t, "64m")
	dir := filepath.Join(mnt, "db")
	opts := diskFullOptions()
	opts.ReserveBytes, opts.IngestBytes, opts.NoCompression = -1, 1<<20, true
	st, err := rocks.Open(dir, opts)
	trietest.Must(t, err, "Open")
	val := bytes.Repeat([]byte{0xab}, 500)
	b := &vertex.Batch{Admin: []byte("admin")}
	for id := vertex.ID(1); id <= 8_000; id++ { // ~4 MB: ingested
		b.Puts = append(b.Puts, vertex.Record{ID: id, Rec: val})
	}
	filler := fill(t, mnt, 1<<20)
	err = st.Write(b)
	var nse *rocks.NoSpaceError
	if !errors.As(err, &nse) || !nse.Refused || !errors.Is(err, rocks.ErrNoSpace) {
		t.Fatalf("Write of a 4 MB batch with 1 MB free: %v, want a refused *NoSpaceError", err)
	}
	t.Logf("Write: %v", err)
	ents, err := os.ReadDir(dir)
	trietest.Must(t, err, "ReadDir")
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "hexstate-ingest-") {
			t.Errorf("the failed write left %s behind", e.Name())
		}
	}
	if rec, err := st.Vertex(1); err != nil || rec != nil {
		t.Fatalf("vertex 1 after the failed write: %x, %v; want none", rec, err)
	}
	trietest.Must(t, os.Remove(filler), "removing the filler")
	trietest.Must(t, st.Write(b), "Write retried after freeing space")
	trietest.Must(t, st.Close(), "Close")

	st, err = rocks.Open(dir, opts)
	trietest.Must(t, err, "reopen")
	defer st.Close()
	for _, id := range []vertex.ID{1, 4_000, 8_000} {
		rec, err := st.Vertex(id)
		trietest.Must(t, err, "Vertex(%d)", id)
		if !bytes.Equal(rec, val) {
			t.Fatalf("vertex %d after the reopen: %d bytes, want the batch's %d", id, len(rec), len(val))
		}
	}
	if adm, err := st.Admin(); err != nil || string(adm) != "admin" {
		t.Fatalf("admin record after the reopen: %q, %v", adm, err)
	}
}
