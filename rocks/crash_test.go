package rocks_test

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/hexstate/hexstate/internal/trietest"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/internal/ethtests"
	"github.com/hexstate/hexstate/rocks"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// Crash safety: TestCrash runs this test binary again as a child process
// (TestCrashChild, selected by -test.run and enabled by environment variables)
// that persists block after block into a RocksDB directory, and SIGKILLs it at a
// random moment, over and over on the same directory. trietest.Each child continues from
// the block the store says was persisted last.
//
// Block B's changes are derived from B alone (a seeded PRNG), so the parent can
// rebuild the exact state of any block on an in-memory reference. Before
// Persist(B) the child appends "B root" to a log file and fsyncs it; after a
// kill the store must be at the last block logged (persist done) or the one
// before it (killed before or during Persist), with the root logged for it, no
// earlier than the block seen after the previous kill, and hold exactly the
// reference's keys and values.

const (
	crashEnvDir    = "HEXSTATE_CRASH_DIR"
	crashEnvLog    = "HEXSTATE_CRASH_LOG"
	crashEnvFormat = "HEXSTATE_CRASH_FORMAT"
	crashEnvMode   = "HEXSTATE_CRASH_MODE"
	// crashEnvIngest set makes a child write every sorted batch as ingested
	// SST files (rocks.Options.IngestBytes 1); crashStart sets it for every
	// other child, so that one directory sees both write paths in turn.
	crashEnvIngest = "HEXSTATE_CRASH_INGEST"
)

// crashApply applies block b's changes to fr (and to the models, when not nil).
func crashApply(t testing.TB, mode string, fr *trie.Frame, b uint64, m trietest.KeyModel, st *trietest.BlockState) {
	t.Helper()
	switch mode {
	case "generic":
		if m == nil {
			m = trietest.KeyModel{}
		}
		trietest.ApplyKeys(t, fr, m, trietest.KeyOps(b, 60, trietest.Universe, 30), int(b))
	case "state":
		if st == nil {
			st = &trietest.BlockState{Accts: map[int]trie.Account{}, Slots: map[int]map[int]uint64{}}
		}
		st.Apply(t, fr, rand.New(rand.NewPCG(b, 77)), int(b), 12)
	default:
		t.Fatalf("unknown crash mode %q", mode)
	}
}

// crashRocksOptions are the options of the crash tests' stores, children and
// parents alike: small memtables, and in a child started with crashEnvIngest
// every sorted batch ingested.
func crashRocksOptions() *rocks.Options {
	o := &rocks.Options{BlockCacheBytes: 4 << 20, WriteBufferBytes: 1 << 20, BackgroundJobs: 2}
	if os.Getenv(crashEnvIngest) != "" {
		o.IngestBytes = 1
	}
	return o
}

// TestCrashChild is the child process of TestCrash; it is skipped unless
// HEXSTATE_CRASH_DIR is set. It persists blocks until it is killed.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashEnvDir)
	if dir == "" {
		t.Skip("the child process of TestCrash")
	}
	f, err := strconv.Atoi(os.Getenv(crashEnvFormat))
	trietest.Must(t, err, "format")
	mode := os.Getenv(crashEnvMode)
	st, err := rocks.Open(dir, crashRocksOptions())
	trietest.Must(t, err, "child: rocks.Open")
	db, err := trie.Open(st, &trie.Options{Format: vertex.Format(f)})
	trietest.Must(t, err, "child: trie.Open")
	log := crashOpenLog(t, os.Getenv(crashEnvLog))
	for b := db.Block() + 1; b < 1<<20; b++ {
		fr := db.Begin()
		crashApply(t, mode, fr, b, nil, nil)
		root := trietest.FrameHash(t, fr)
		_, err := fmt.Fprintf(log, "%d %x\n", b, root[:])
		trietest.Must(t, err, "child: writing the log")
		trietest.Must(t, log.Sync(), "child: syncing the log")
		trietest.Must(t, db.Persist(fr, b), "child: Persist(%d)", b)
		trietest.Must(t, db.Flush(), "child: Flush(%d)", b) // the write lands before the next block is logged
	}
}

// crashOpenLog opens a child's log for appending, first cutting off a line
// an earlier child was killed while writing: a write that crosses a page
// boundary can stop halfway when the kill arrives, and the next child's line
// would be appended to the torn one.
func crashOpenLog(t *testing.T, path string) *os.File {
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatalf("child: reading the log: %v", err)
	}
	if whole := bytes.LastIndexByte(data, '\n') + 1; whole < len(data) {
		trietest.Must(t, os.Truncate(path, int64(whole)), "child: cutting a torn line off the log")
	}
	log, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	trietest.Must(t, err, "child: log")
	return log
}

// crashLog reads the child's log: the root logged for each block (every
// attempt at a block must have logged the same root) and the last block
// logged. A last line without its newline is one the child was killed while
// writing, before the block's persist began: it is not counted.
func crashLog(t *testing.T, path string) (map[uint64]hashkey.Hash, uint64) {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, 0
	}
	trietest.Must(t, err, "reading the log")
	data = data[:bytes.LastIndexByte(data, '\n')+1]
	roots := map[uint64]hashkey.Hash{}
	var last uint64
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var b uint64
		var h []byte
		if _, err := fmt.Sscanf(sc.Text(), "%d %x", &b, &h); err != nil || len(h) != 32 {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		r := hashkey.Hash(h)
		if old, ok := roots[b]; ok && old != r {
			t.Fatalf("block %d logged with two roots, %v and %v: the block data is not deterministic", b, old, r)
		}
		roots[b] = r
		last = b
	}
	return roots, last
}

// crashRef is the reference state: every block up to block applied to an
// in-memory trie and to the models.
type crashRef struct {
	mode  string
	block uint64
	fr    *trie.Frame
	m     trietest.KeyModel
	st    *trietest.BlockState
}

func newCrashRef(t *testing.T, mode string) *crashRef {
	db, err := trie.Open(trie.NewMemoryBackend(), nil)
	trietest.Must(t, err, "reference Open")
	return &crashRef{mode: mode, fr: db.Begin(), m: trietest.KeyModel{},
		st: &trietest.BlockState{Accts: map[int]trie.Account{}, Slots: map[int]map[int]uint64{}}}
}

func (r *crashRef) advance(t *testing.T, to uint64) hashkey.Hash {
	t.Helper()
	if to < r.block {
		t.Fatalf("the store went back from block %d to block %d: a persisted block was lost", r.block, to)
	}
	for ; r.block < to; r.block++ {
		crashApply(t, r.mode, r.fr, r.block+1, r.m, r.st)
	}
	return trietest.FrameHash(t, r.fr)
}

func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("kills child processes for ~30 s; skipped with -short")
	}
	if os.Getenv(crashEnvDir) != "" {
		t.Skip("in the child process")
	}
	kills := 15 // per configuration: 60 in all
	maxSleep := 200
	if ethtests.RaceEnabled {
		kills, maxSleep = 13, 300 // 52 in all; a race binary starts and runs slower
	}
	for _, mode := range []string{"generic", "state"} {
		for _, f := range trietest.Formats {
			t.Run(mode+"/"+f.String(), func(t *testing.T) {
				crashRun(t, mode, f, kills, maxSleep)
			})
		}
	}
}

func crashRun(t *testing.T, mode string, f vertex.Format, kills, maxSleep int) {
	tmp := t.TempDir()
	dir, logPath := filepath.Join(tmp, "db"), filepath.Join(tmp, "roots.log")
	ref := newCrashRef(t, mode)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(f)))
	var prev uint64
	midPersist := 0
	for k := 0; k < kills; k++ {
		cmd, out := crashStart(t, k, "TestCrashChild", crashEnvDir+"="+dir, crashEnvLog+"="+logPath,
			crashEnvFormat+"="+strconv.Itoa(int(f)), crashEnvMode+"="+mode)
		if k%2 == 1 {
			// Every other child is first let log two blocks (the first of
			// them is then persisted: a child logs a block before its
			// persist), so that the run makes progress however loaded the
			// machine is (under CI, with the other packages' tests beside
			// it, a child's start-up can take most of maxSleep); the others
			// may die while opening.
			crashAwaitLines(logPath, crashLines(logPath)+2, 20*time.Second)
		}
		time.Sleep(time.Duration(5+rng.IntN(maxSleep-4)) * time.Millisecond)
		crashKill(t, k, cmd, out)

		roots, last := crashLog(t, logPath)
		_, db := crashReopen(t, k, dir, f)
		b := db.Block()
		root := trietest.DBRoot(t, db)
		switch {
		case b < prev:
			t.Fatalf("kill %d: store at block %d after being at %d: a persisted block was lost", k, b, prev)
		case b != last && b+1 != last && !(b == 0 && last == 0):
			t.Fatalf("kill %d: store at block %d, last block logged %d: want it or the one before", k, b, last)
		case b > 0 && roots[b] != root:
			t.Fatalf("kill %d: store at block %d with root %v, the child logged %v", k, b, root, roots[b])
		case b == 0 && root != hashkey.EmptyRoot:
			t.Fatalf("kill %d: store at block 0 with root %v", k, root)
		}
		if b+1 == last {
			midPersist++
		}
		if want := ref.advance(t, b); want != root {
			t.Fatalf("kill %d: store at block %d with root %v, reference %v", k, b, root, want)
		}
		fr := db.Begin()
		if got := trietest.FrameHash(t, fr); got != root {
			t.Fatalf("kill %d: Hash of a fresh fr %v, StateRoot %v", k, got, root)
		}
		if mode == "generic" {
			trietest.CheckKeys(t, fr, ref.m, trietest.Universe)
		} else {
			ref.st.Check(t, fr, nil)
			checkLeafIndex(t, k, db, true)
		}
		trietest.Must(t, db.Close(), "kill %d: Close", k)
		if t.Failed() {
			t.FailNow()
		}
		prev = b
	}
	t.Logf("%d kills: store reached block %d; %d kills left the last logged block unpersisted", kills, prev, midPersist)
	if prev < uint64(kills/2) {
		t.Errorf("only %d blocks persisted in %d runs: the children barely ran", prev, kills)
	}
}

// crashLines returns how many whole lines the child's log holds (a line
// being written is not counted).
func crashLines(path string) int {
	data, _ := os.ReadFile(path)
	return bytes.Count(data, []byte{'\n'})
}

// crashAwaitLines waits until the log holds n whole lines, or for at most
// limit.
func crashAwaitLines(path string, n int, limit time.Duration) {
	for end := time.Now().Add(limit); time.Now().Before(end) && crashLines(path) < n; {
		time.Sleep(2 * time.Millisecond)
	}
}

// crashStart starts this test binary again as the child of kill k, a process
// that runs only the test named test, with env added to its environment (and
// crashEnvIngest for odd k); out collects its output.
func crashStart(t *testing.T, k int, test string, env ...string) (cmd *exec.Cmd, out *bytes.Buffer) {
	t.Helper()
	out = new(bytes.Buffer)
	cmd = exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	if k%2 == 1 {
		cmd.Env = append(cmd.Env, crashEnvIngest+"=1")
	}
	cmd.Stdout, cmd.Stderr = out, out
	trietest.Must(t, cmd.Start(), "starting the child")
	return cmd, out
}

// crashKill SIGKILLs the child of kill k and fails t if it had ended by itself.
func crashKill(t *testing.T, k int, cmd *exec.Cmd, out *bytes.Buffer) {
	t.Helper()
	_ = cmd.Process.Signal(syscall.SIGKILL)
	err := cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
		t.Fatalf("kill %d: the child ended by itself (%v):\n%s", k, err, out.String())
	}
}

// crashReopen opens the store in dir after kill k, as a restarted client does.
func crashReopen(t *testing.T, k int, dir string, f vertex.Format) (*rocks.Store, *trie.DB) {
	t.Helper()
	st, err := rocks.Open(dir, crashRocksOptions())
	trietest.Must(t, err, "kill %d: rocks.Open after the kill", k)
	db, err := trie.Open(st, &trie.Options{Format: f})
	if err != nil {
		st.Close()
		t.Fatalf("kill %d: trie.Open after the kill: %v", k, err)
	}
	return st, db
}
