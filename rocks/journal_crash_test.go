package rocks_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/internal/ethtests"
	"github.com/hexstate/hexstate/internal/trietest"
	"github.com/hexstate/hexstate/rocks"
	"github.com/hexstate/hexstate/trie"
)

// Journal crash safety: TestJournalCrash runs TestJournalCrashChild as a
// child process that journals every block (and persists every
// journalCrashEvery blocks in the background) up to block journalCrashBlocks,
// and SIGKILLs it at random moments. The child appends "B root" to a log only
// after Journal(B) returned. After every kill the reopened store must hold
// every logged block: the persisted block plus the frames recovered from the
// journal must reach the last block logged (or the one after it, journalled
// but not logged), with the logged roots, and the tip's state must match a
// reference. The journal is not synced: a kill of the process does not lose
// what the page cache holds.

const (
	journalCrashEnvDir = "HEXSTATE_JCRASH_DIR"
	journalCrashEnvLog = "HEXSTATE_JCRASH_LOG"
	journalCrashBlocks = 1000
	journalCrashEvery  = 64
)

// journalCrashTip returns the newest frame of the recovered chain (the base
// when nothing was recovered) and its block.
func journalCrashTip(db *trie.DB) (*trie.Frame, uint64) {
	var tip *trie.Frame
	block := db.Block()
	for _, r := range db.Recovered() {
		if r.Block > block || tip == nil && r.Block == block {
			tip, block = r.Frame, r.Block
		}
	}
	return tip, block
}

// TestJournalCrashChild is the child process of TestJournalCrash.
func TestJournalCrashChild(t *testing.T) {
	dir := os.Getenv(journalCrashEnvDir)
	if dir == "" {
		t.Skip("the child process of TestJournalCrash")
	}
	st, err := rocks.Open(dir, crashRocksOptions())
	trietest.Must(t, err, "child: rocks.Open")
	db, err := trie.Open(st, nil) // journalling is on by default on RocksDB
	trietest.Must(t, err, "child: trie.Open")
	log := crashOpenLog(t, os.Getenv(journalCrashEnvLog))
	tip, b := journalCrashTip(db)
	for b++; b <= journalCrashBlocks; b++ {
		var fr *trie.Frame
		if tip == nil {
			fr = db.Begin()
		} else {
			fr = tip.Begin()
		}
		crashApply(t, "state", fr, b, nil, nil)
		root := trietest.FrameHash(t, fr)
		trietest.Must(t, db.Journal(fr, b), "child: Journal(%d)", b)
		_, err := fmt.Fprintf(log, "%d %x\n", b, root[:])
		trietest.Must(t, err, "child: writing the log")
		if b%journalCrashEvery == 0 {
			trietest.Must(t, db.Persist(fr, b), "child: Persist(%d)", b)
		}
		tip = fr
	}
	select {} // wait for the kill
}

func TestJournalCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("kills child processes for ~30 s; skipped with -short")
	}
	if os.Getenv(journalCrashEnvDir) != "" {
		t.Skip("in the child process")
	}
	kills, maxSleep := 60, 500
	if ethtests.RaceEnabled {
		kills, maxSleep = 25, 900
	}
	tmp := t.TempDir()
	dir, logPath := filepath.Join(tmp, "db"), filepath.Join(tmp, "roots.log")
	ref := newCrashRef(t, "state")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 64))
	var prevTip uint64
	recoveredAcrossPersist, recoveredMax := 0, 0
	for k := 0; k < kills; k++ {
		cmd, out := crashStart(t, k, "TestJournalCrashChild", journalCrashEnvDir+"="+dir, journalCrashEnvLog+"="+logPath)
		time.Sleep(time.Duration(100+rng.IntN(maxSleep)) * time.Millisecond)
		crashKill(t, k, cmd, out)

		roots, last := crashLog(t, logPath)
		_, db := crashReopen(t, k, dir, 0)
		persisted := db.Block()
		if persisted%journalCrashEvery != 0 {
			t.Fatalf("kill %d: store persisted at block %d, not a multiple of %d", k, persisted, journalCrashEvery)
		}
		tipFr, tip := journalCrashTip(db)
		switch {
		case tip < prevTip:
			t.Fatalf("kill %d: the store reaches block %d, it reached %d before the kill: blocks lost", k, tip, prevTip)
		case tip != last && tip != last+1:
			t.Fatalf("kill %d: the store reaches block %d (persisted %d, %d frames recovered), last block journalled and logged %d: blocks lost",
				k, tip, persisted, len(db.Recovered()), last)
		}
		for b := persisted + 1; b <= last; b++ {
			r, ok := roots[b]
			if !ok {
				// Journalled but not logged by an earlier child killed in
				// between; a later child went on from it, so the blocks
				// logged after it can only be recovered through it.
				continue
			}
			if db.RecoveredFrame(b, r) == nil {
				t.Fatalf("kill %d: block %d (root %v) logged but not recovered", k, b, r)
			}
		}
		if r, ok := roots[persisted]; ok && persisted > 0 && trietest.DBRoot(t, db) != r {
			t.Fatalf("kill %d: persisted block %d has root %v, logged %v", k, persisted, trietest.DBRoot(t, db), roots[persisted])
		}
		want := ref.advance(t, tip)
		var got hashkey.Hash
		if tipFr == nil {
			tipFr = db.Begin()
		}
		got = trietest.FrameHash(t, tipFr)
		if got != want {
			t.Fatalf("kill %d: tip block %d has root %v, reference %v", k, tip, got, want)
		}
		if k%5 == 0 || tip >= journalCrashBlocks {
			ref.st.Check(t, tipFr, nil)
			checkLeafIndex(t, k, db, true)
		}
		if tip/journalCrashEvery*journalCrashEvery > persisted {
			recoveredAcrossPersist++ // a Persist had been accepted, its write had not landed
		}
		recoveredMax = max(recoveredMax, len(db.Recovered()))
		trietest.Must(t, db.Close(), "kill %d: Close", k)
		if t.Failed() {
			t.FailNow()
		}
		prevTip = tip
		if tip >= journalCrashBlocks && k >= 50 {
			break
		}
	}
	t.Logf("%d kills: tip at block %d; %d kills recovered frames beyond a persist whose write had not landed; up to %d frames recovered at once",
		kills, prevTip, recoveredAcrossPersist, recoveredMax)
}
