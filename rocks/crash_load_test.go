package rocks_test

import (
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/hexstate/hexstate/internal/trietest"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/internal/ethtests"
	"github.com/hexstate/hexstate/rocks"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// Crash safety of a streaming load: TestCrashLoad runs TestCrashLoadChild as a
// child process that loads the same state with a StateLoader into a RocksDB
// directory (when the store is still empty) and then waits, and SIGKILLs it at
// random moments, over and over on the same directory. After every kill the
// store must be either empty (the load did not commit: the batches it wrote are
// invisible) or hold exactly the loaded state; and a load restarted over the
// records of a killed one must still commit the right state.

// crashLoadState is the state the children load: enough accounts for several
// batches (fewer in a race binary, which runs much slower).
func crashLoadState() []trie.AccountLeaf {
	n := 120000
	if ethtests.RaceEnabled {
		n = 40000
	}
	return trietest.RandomAccountLeaves(rand.New(rand.NewSource(21)), n, 4, 12)
}

// crashEnvDone names the file a child creates once its load has committed.
const crashEnvDone = "HEXSTATE_CRASH_DONE"

// TestCrashLoadChild is the child process of TestCrashLoad; it is skipped
// unless HEXSTATE_CRASH_DIR is set.
func TestCrashLoadChild(t *testing.T) {
	dir := os.Getenv(crashEnvDir)
	if dir == "" {
		t.Skip("the child process of TestCrashLoad")
	}
	f, err := strconv.Atoi(os.Getenv(crashEnvFormat))
	trietest.Must(t, err, "format")
	st, err := rocks.Open(dir, crashRocksOptions())
	trietest.Must(t, err, "child: rocks.Open")
	db, err := trie.Open(st, &trie.Options{Format: vertex.Format(f)})
	trietest.Must(t, err, "child: trie.Open")
	if r, _ := db.StateRoot(); r == hashkey.EmptyRoot {
		l, err := db.NewStateLoader()
		trietest.Must(t, err, "child: NewStateLoader")
		for rest := crashLoadState(); len(rest) > 0; {
			n := min(len(rest), 1000)
			trietest.Must(t, l.Add(rest[:n]), "child: Add")
			rest = rest[n:]
		}
		_, err = l.Commit(1)
		trietest.Must(t, err, "child: Commit")
	}
	trietest.Must(t, os.WriteFile(os.Getenv(crashEnvDone), nil, 0o644), "child: done file")
	time.Sleep(time.Hour) // until killed
}

func TestCrashLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("kills child processes; skipped with -short")
	}
	if os.Getenv(crashEnvDir) != "" {
		t.Skip("in the child process")
	}
	state := crashLoadState()
	for _, f := range trietest.Formats {
		t.Run(f.String(), func(t *testing.T) {
			ref, _ := trie.Open(trie.NewMemoryBackend(), &trie.Options{Format: f})
			rtx := ref.Begin()
			trietest.Must(t, rtx.BulkLoadAccounts(state), "reference BulkLoadAccounts")
			want, _ := rtx.StateRoot()

			dir := filepath.Join(t.TempDir(), "db")
			rng := rand.New(rand.NewSource(time.Now().UnixNano()))
			empty, midLoad, loaded := 0, 0, 0
			done := filepath.Join(t.TempDir(), "done")
			slow := time.Duration(1)
			if ethtests.RaceEnabled {
				slow = 5 // a race binary starts and loads several times slower
			}
			const kills = 12 // at random moments; then one run that completes the load
			for k := 0; k <= kills; k++ {
				cmd, out := crashStart(t, k, "TestCrashLoadChild", crashEnvDir+"="+dir, crashEnvFormat+"="+strconv.Itoa(int(f)), crashEnvDone+"="+done)
				if k < kills {
					time.Sleep(time.Duration(5+rng.Intn(40+40*k)) * slow * time.Millisecond) // later and later
				} else {
					for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
						if _, err := os.Stat(done); err == nil {
							break
						}
						if time.Since(start) > 2*time.Minute {
							t.Fatalf("the last child did not finish its load:\n%s", out.String())
						}
					}
				}
				crashKill(t, k, cmd, out)

				st, db := crashReopen(t, k, dir, f)
				switch root := trietest.DBRoot(t, db); {
				case root == hashkey.EmptyRoot && db.Block() == 0:
					empty++
					// Records of the unfinished load above the top, or index
					// entries of its accounts: the kill came after at least one
					// batch was written (a batch may hold back all its records,
					// never its index entries).
					n, entries := 0, 0
					trietest.Must(t, st.VertexRange(trietest.AdminTop(t, st)+1, 1<<30, func(vertex.ID, []byte) error { n++; return nil }), "VertexRange")
					trietest.Must(t, st.EachLeaf(nil, func(key, _ []byte) error {
						if len(key) >= 32 { // not the marker
							entries++
						}
						return nil
					}), "EachLeaf")
					// A load's first batch empties the index; the store deletes
					// the marker of an empty index on its own, just before that
					// batch, so a kill between the two finds it gone too.
					want := db.HasLeafIndex()
					if n > 0 || entries > 0 {
						midLoad++
						want = false
					}
					checkLeafIndex(t, k, db, want)
				case root == want && db.Block() == 1:
					loaded++
					checkLeafIndex(t, k, db, true)
					fr := db.Begin()
					for i := 0; i < len(state); i += 997 {
						a := state[i]
						got, ok, err := fr.Account(a.AddrHash)
						if err != nil || !ok || got.Nonce != a.Account.Nonce || got.Balance != a.Account.Balance {
							t.Fatalf("kill %d: account %v reads %+v, %v, %v", k, a.AddrHash, got, ok, err)
						}
						for _, s := range a.Storage {
							if v, err := fr.Storage(a.AddrHash, s.Hash); err != nil || v != s.Value {
								t.Fatalf("kill %d: slot %v reads %v, %v; want %v", k, s.Hash, &v, err, &s.Value)
							}
						}
					}
					if got := trietest.FrameHash(t, fr); got != want {
						t.Fatalf("kill %d: re-hashed root %v, want %v", k, got, want)
					}
				default:
					t.Fatalf("kill %d: store at block %d with root %v: neither empty nor the loaded state %v", k, db.Block(), root, want)
				}
				trietest.Must(t, db.Close(), "kill %d: Close", k)
			}
			t.Logf("%d kills left the store empty (%d of them with written batches of the unfinished load), %d found it loaded", empty, midLoad, loaded)
			if loaded == 0 {
				t.Fatal("the store was never found loaded")
			}
		})
	}
}
