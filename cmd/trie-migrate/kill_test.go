package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hexstate/hexstate/internal/trietest"
	"github.com/hexstate/hexstate/migrate"
	"github.com/hexstate/hexstate/rocks"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// TestKills SIGKILLs trie-migrate (this test binary running main) at random
// moments of one migration, at least 10 times, each run resuming the one
// before; the last run is let finish: it resumes, verifies, and the target is
// byte for byte the builder's store of the same accounts. The source is
// built by the builder (copied with the read-ahead) or grown by frames
// (scattered IDs: preloaded, or rebuilt from its leaf index with -method
// rebuild).
func TestKills(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	for _, c := range []struct {
		grown  bool
		method string
	}{{false, "auto"}, {true, "auto"}, {true, "rebuild"}} {
		t.Run(fmt.Sprintf("grown=%v/method=%s", c.grown, c.method), func(t *testing.T) { testKills(t, c.grown, c.method) })
	}
}

func testKills(t *testing.T, grown bool, method string) {
	d := t.TempDir()
	accts := trietest.StateAccounts(150_000, 3)
	if grown {
		growStore(t, d+"/db", accts, 10_000, 5)
	} else {
		makeStore(t, d+"/db", vertex.FormatV1, accts)
	}
	args := []string{"-checkpoint", "4000", "-samples", "200", "-method", method, d + "/db", d + "/db.v2"}
	rng := rand.New(rand.NewPCG(1, 2))
	kills, finished, restarts := 0, false, 0
	progressed := false // the last kill left a checkpoint with progress
	for kills < 10 || (kills < 40 && !finished) {
		cmd := command(args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		trietest.Must(t, cmd.Start(), "start")
		// Startup (opening both stores) takes part of the delay; the copy the rest.
		time.AfterFunc(time.Duration(20+rng.IntN(700))*time.Millisecond, func() { cmd.Process.Signal(syscall.SIGKILL) })
		err := cmd.Wait()
		if err == nil && kills < 10 && restarts < 5 {
			// The copy outran the kills: start again with a new target, so
			// that one migration is killed at least 10 times.
			restarts++
			t.Logf("finished after %d kills: starting again", kills)
			kills = 0
			trietest.Must(t, os.RemoveAll(d+"/db.v2"), "removing the target")
			continue
		}
		if err == nil {
			finished = true
			break
		}
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("run %d failed: %v\n%s", kills, err, out.String())
		}
		kills++
		// docs/format.md §8: "hxmig2" root done | records (done) or
		// "hxcp2" format top records … (copying).
		progressed = true
		switch cp, _ := os.ReadFile(migrate.Checkpoint(d + "/db.v2")); {
		case len(cp) == 47 && cp[38] == 1:
			t.Logf("kill %d: copy committed (%d records), verifying", kills, binary.BigEndian.Uint64(cp[39:47]))
		case len(cp) >= 61:
			t.Logf("kill %d: checkpointed at %d records", kills, binary.BigEndian.Uint64(cp[53:61]))
		default:
			// On a loaded machine (the race detector, other work) every
			// kill may come before the first checkpoint: the next run
			// then starts again, and must not say it resumed.
			progressed = false
			t.Logf("kill %d: before the first checkpoint", kills)
		}
	}
	if kills < 10 {
		t.Fatalf("the migration finished after %d kills: make the state larger", kills)
	}
	if !finished {
		cmd := command(args...)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "verified") {
			t.Fatalf("final run: %v\n%s", err, out)
		}
		if strings.Contains(string(out), "resumed") != progressed {
			t.Fatalf("final run after a kill with progress %v: says it resumed %v:\n%s", progressed, !progressed, out)
		}
	}
	store, err := rocks.Open(d+"/db.v2", nil)
	trietest.Must(t, err, "open target")
	db, err := trie.Open(store, &trie.Options{Format: vertex.FormatV2})
	trietest.Must(t, err, "trie.Open")
	defer db.Close()
	ref, err := trie.Open(trie.NewMemoryBackend(), nil)
	trietest.Must(t, err, "Open")
	trietest.LoadState(t, ref, accts, 77)
	if trietest.DBRoot(t, db) != trietest.DBRoot(t, ref) {
		t.Fatal("the migrated root is not the builder's")
	}
	built := refBackend(t, accts)
	trietest.SameLeaves(t, store, built) // the source's index, copied after the verification
	got, want := trietest.Records(t, store), trietest.Records(t, built)
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for id, r := range want {
		if !bytes.Equal(got[id], r) {
			t.Fatalf("record %d differs from the builder's", id)
		}
	}
}

// refBackend is the in-memory backend of the builder's v2 store of accts.
func refBackend(t *testing.T, accts []trie.AccountLeaf) trie.Backend {
	b := trie.NewMemoryBackend()
	db, err := trie.Open(b, &trie.Options{Format: vertex.FormatV2})
	trietest.Must(t, err, "Open")
	trietest.LoadState(t, db, accts, 77)
	return b
}
