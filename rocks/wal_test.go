package rocks_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/internal/trietest"
	"github.com/hexstate/hexstate/rocks"
	"github.com/hexstate/hexstate/trie"
)

// WAL damage: a child process persists blocks into the write-ahead log only
// (memtables large enough never to be flushed) and SIGKILLs itself, so that
// RocksDB does not flush on close; the parent then damages the log.

const (
	walEnvDir = "HEXSTATE_WAL_DIR"
	walBlocks = 10
)

// walOptions: memtables that the test's blocks never fill, so every block
// stays in the write-ahead log only.
func walOptions() *rocks.Options {
	return &rocks.Options{BlockCacheBytes: 4 << 20, WriteBufferBytes: 64 << 20, BackgroundJobs: 2}
}

// TestWALChild is the child process of the WAL tests; it is skipped unless
// HEXSTATE_WAL_DIR is set. It persists walBlocks blocks, prints each block's
// root, and kills itself.
func TestWALChild(t *testing.T) {
	dir := os.Getenv(walEnvDir)
	if dir == "" {
		t.Skip("the child process of the WAL tests")
	}
	st, err := rocks.Open(dir, walOptions())
	trietest.Must(t, err, "rocks.Open")
	db, err := trie.Open(st, &trie.Options{SyncPersist: true}) // each persist in the log when it returns
	trietest.Must(t, err, "trie.Open")
	for b := uint64(1); b <= walBlocks; b++ {
		fr := db.Begin()
		for i := 0; i < 300; i++ {
			n := int(b)*300 + i
			trietest.Must(t, fr.UpdateAccount(trietest.Addr(n), trietest.Acc(b, uint64(n))), "UpdateAccount")
		}
		trietest.Must(t, db.Persist(fr, b), "Persist(%d)", b)
		root := trietest.DBRoot(t, db)
		fmt.Printf("persisted %d %x\n", b, root[:])
	}
	if n, _ := st.Property("rocksdb.num-immutable-mem-table"); n != "0" {
		t.Fatalf("%s immutable memtables: a flush may have started; the test wants everything in the log", n)
	}
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

// walStore runs TestWALChild on a new directory and returns the directory,
// the roots the child persisted by block, and the path of its last log file.
func walStore(t *testing.T) (string, map[uint64]hashkey.Hash, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestWALChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), walEnvDir+"="+dir)
	out, _ := cmd.CombinedOutput()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the child did not kill itself after persisting (%v):\n%s", cmd.ProcessState, out)
	}
	roots := map[uint64]hashkey.Hash{}
	for _, line := range strings.Split(string(out), "\n") {
		var b uint64
		var h []byte
		if _, err := fmt.Sscanf(line, "persisted %d %x", &b, &h); err == nil && len(h) == 32 {
			roots[b] = hashkey.Hash(h)
		}
	}
	if len(roots) != walBlocks {
		t.Fatalf("the child persisted %d blocks, want %d:\n%s", len(roots), walBlocks, out)
	}
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	trietest.Must(t, err, "glob")
	if len(logs) == 0 {
		t.Fatalf("no write-ahead log in %s", dir)
	}
	slices.Sort(logs)
	return dir, roots, logs[len(logs)-1]
}

// adminBlock reads the block number out of a raw admin record
// (docs/format.md §3); trie.Open on the salvaged store cross-checks it.
func adminBlock(t *testing.T, rec []byte) uint64 {
	t.Helper()
	_, block := trietest.AdminFields(t, rec)
	return block
}

// openTrie opens the trie database on st and returns its block and root.
func openTrie(t *testing.T, st *rocks.Store) (*trie.DB, uint64, hashkey.Hash) {
	t.Helper()
	db, err := trie.Open(st, nil)
	if err != nil {
		st.Close()
		t.Fatalf("trie.Open: %v", err)
	}
	return db, db.Block(), trietest.DBRoot(t, db)
}

// TestWALCorruptMiddle flips four bytes in the middle of the write-ahead log:
// Open must refuse the store with ErrWALCorrupt naming the state it would
// keep, change nothing, and with SalvageWAL open it at that state and report
// the damage; the salvaged store then opens normally and takes new blocks.
func TestWALCorruptMiddle(t *testing.T) {
	if os.Getenv(diskFullEnvDir) != "" || os.Getenv(walEnvDir) != "" {
		t.Skip("in a child process")
	}
	dir, roots, log := walStore(t)
	data, err := os.ReadFile(log)
	trietest.Must(t, err, "reading the log")
	for i := len(data) / 2; i < len(data)/2+4; i++ {
		data[i] ^= 0xff
	}
	trietest.Must(t, os.WriteFile(log, data, 0o644), "writing the log")

	var kept uint64
	for try := 0; try < 2; try++ { // a refused open changes nothing: the second one refuses too
		st, err := rocks.Open(dir, walOptions())
		if err == nil {
			_, b, _ := openTrie(t, st)
			t.Fatalf("Open of a store with a damaged log succeeded, at block %d of %d", b, walBlocks)
		}
		if !errors.Is(err, rocks.ErrWALCorrupt) {
			t.Fatalf("Open: %v, want ErrWALCorrupt", err)
		}
		var oe *rocks.OpenError
		if !errors.As(err, &oe) || oe.WAL == nil {
			t.Fatalf("Open: %v: want an *OpenError with the WAL report", err)
		}
		kept = adminBlock(t, oe.WAL.Admin)
		t.Logf("Open: %v; it would keep block %d of %d", err, kept, walBlocks)
		if kept >= walBlocks {
			t.Fatalf("the report keeps block %d, but the damage is in the middle of %d blocks", kept, walBlocks)
		}
		if !strings.Contains(err.Error(), filepath.Base(log)) {
			t.Errorf("the error does not name the log %s: %v", filepath.Base(log), err)
		}
	}
	after, err := os.ReadFile(log)
	trietest.Must(t, err, "reading the log again")
	if string(after) != string(data) {
		t.Fatalf("the refused opens changed the damaged log")
	}

	o := walOptions()
	o.SalvageWAL = true
	st, err := rocks.Open(dir, o)
	trietest.Must(t, err, "Open with SalvageWAL")
	d := st.WALDamage()
	if d == nil {
		st.Close()
		t.Fatalf("a salvaging Open of a damaged log reports no damage")
	}
	if got := adminBlock(t, d.Admin); got != kept {
		t.Errorf("WALDamage keeps block %d, the refused Open said %d", got, kept)
	}
	db, block, root := openTrie(t, st)
	if block != kept {
		t.Fatalf("salvaged store at block %d, WALDamage says %d", block, kept)
	}
	if want := roots[block]; block > 0 && root != want {
		t.Fatalf("salvaged store at block %d with root %v, the child persisted %v", block, root, want)
	}
	t.Logf("salvaged at block %d (%s; sequence %d)", block, d.Detail, d.Sequence)
	trietest.Must(t, db.Close(), "Close")

	// Acknowledged: the store now opens without complaint, at the same state,
	// and takes the next block.
	st, err = rocks.Open(dir, walOptions())
	trietest.Must(t, err, "Open after salvaging")
	if d := st.WALDamage(); d != nil {
		t.Errorf("WALDamage after a clean reopen: %+v", d)
	}
	db, b2, r2 := openTrie(t, st)
	defer db.Close()
	if b2 != block || r2 != root {
		t.Fatalf("reopened at block %d root %v, salvaged at %d %v", b2, r2, block, root)
	}
	fr := db.Begin()
	trietest.Must(t, fr.UpdateAccount(trietest.Addr(1), trietest.Acc(1, 1)), "UpdateAccount")
	trietest.Must(t, db.Persist(fr, block+1), "Persist after salvaging")
}

// TestWALTornTail cuts the last log record short, as a crash in the middle of
// a write does: that write was never acknowledged, so Open recovers the blocks
// before it without an error or a damage report.
func TestWALTornTail(t *testing.T) {
	if os.Getenv(diskFullEnvDir) != "" || os.Getenv(walEnvDir) != "" {
		t.Skip("in a child process")
	}
	dir, roots, log := walStore(t)
	fi, err := os.Stat(log)
	trietest.Must(t, err, "stat")
	trietest.Must(t, os.Truncate(log, fi.Size()-100), "truncating the log")
	st, err := rocks.Open(dir, walOptions())
	trietest.Must(t, err, "Open after a torn last record")
	if d := st.WALDamage(); d != nil {
		t.Errorf("WALDamage for a torn last record: %+v", d)
	}
	db, block, root := openTrie(t, st)
	defer db.Close()
	if block != walBlocks-1 || root != roots[block] {
		t.Fatalf("opened at block %d root %v, want block %d root %v", block, root, walBlocks-1, roots[walBlocks-1])
	}
}
