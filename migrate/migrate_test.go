package migrate_test

import (
	"context"
	"errors"
	"math/rand"
	"os"
	"testing"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/migrate"
	"github.com/hexstate/hexstate/rocks"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
	"github.com/holiman/uint256"
)

// buildSource persists a random state of n accounts (every 4th with storage) in
// a new database of format f and returns it.
func buildSource(t *testing.T, f vertex.Format, n int) *trie.DB {
	t.Helper()
	db, err := trie.Open(trie.NewMemoryBackend(), &trie.Options{Format: f})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(int64(n)))
	tx := db.Begin()
	for i := 0; i < n; i++ {
		var a hashkey.Hash
		rng.Read(a[:])
		if err := tx.UpdateAccount(a, trie.Account{Nonce: uint64(i), Balance: *uint256.NewInt(uint64(rng.Int63()))}); err != nil {
			t.Fatal(err)
		}
		for s := 0; i%4 == 0 && s < 1+rng.Intn(30); s++ {
			var slot hashkey.Hash
			rng.Read(slot[:])
			if err := tx.UpdateStorage(a, slot, uint256.NewInt(uint64(1+rng.Intn(1e6)))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.Persist(tx, 77); err != nil {
		t.Fatal(err)
	}
	return db
}

func openRocks(t *testing.T, dir string, f vertex.Format) *trie.DB {
	t.Helper()
	store, err := rocks.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	db, err := trie.Open(store, &trie.Options{Format: f})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func TestMigrateV1ToV2(t *testing.T) {
	src := buildSource(t, vertex.FormatV1, 3000)
	want, _ := src.StateRoot()
	dir := t.TempDir()
	dst := openRocks(t, dir, vertex.FormatV2)
	var reports int
	got, err := migrate.Run(context.Background(), src, dst, dir, migrate.Options{ChunkAccounts: 500, Progress: func(migrate.Progress) { reports++ }})
	if err != nil || got != want {
		t.Fatalf("root %v, %v; want %v", got, err, want)
	}
	if reports < 6 {
		t.Fatalf("%d progress reports for 6 chunks", reports)
	}
	if _, err := os.Stat(migrate.Checkpoint(dir)); !os.IsNotExist(err) {
		t.Fatalf("checkpoint left behind: %v", err)
	}
	if dst.Block() != 77 {
		t.Fatalf("block %d, want 77", dst.Block())
	}
	// The target reopens as v2 with the source's root.
	dst.Close()
	dst = openRocks(t, dir, vertex.FormatV2)
	defer dst.Close()
	if r, _ := dst.StateRoot(); r != want {
		t.Fatalf("reopened root %v, want %v", r, want)
	}
}

func TestMigrateResumes(t *testing.T) {
	src := buildSource(t, vertex.FormatV1, 2000)
	want, _ := src.StateRoot()
	dir := t.TempDir()
	dst := openRocks(t, dir, vertex.FormatV2)
	ctx, cancel := context.WithCancel(context.Background())
	var copied uint64
	_, err := migrate.Run(ctx, src, dst, dir, migrate.Options{ChunkAccounts: 300, Progress: func(p migrate.Progress) {
		copied = p.Accounts
		if p.Accounts >= 600 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) || copied != 600 {
		t.Fatalf("interrupted run: %v after %d accounts", err, copied)
	}
	// The half-migrated target is persisted as block 0, not as the source's
	// block: it must not pass for a database at block 77.
	if dst.Block() != 0 {
		t.Fatalf("interrupted target at block %d, want 0", dst.Block())
	}
	dst.Close()
	// A second run, on a reopened target, starts after the checkpoint.
	dst = openRocks(t, dir, vertex.FormatV2)
	defer dst.Close()
	if dst.Block() != 0 {
		t.Fatalf("reopened interrupted target at block %d, want 0", dst.Block())
	}
	first := uint64(0)
	got, err := migrate.Run(context.Background(), src, dst, dir, migrate.Options{ChunkAccounts: 300, Progress: func(p migrate.Progress) {
		if first == 0 {
			first = p.Accounts
		}
	}})
	if err != nil || got != want {
		t.Fatalf("resumed run: root %v, %v; want %v", got, err, want)
	}
	if first != 900 {
		t.Fatalf("resumed run's first chunk ended at %d accounts, want 900 (600 + 300)", first)
	}
	if dst.Block() != 77 {
		t.Fatalf("finished target at block %d, want 77", dst.Block())
	}
}

// runCrashing runs a migration whose Progress callback panics at the report
// crash selects, simulating a process killed right after that chunk was
// persisted and checkpointed. It returns the last report seen.
func runCrashing(t *testing.T, src, dst *trie.DB, dir string, chunk int, crash func(migrate.Progress) bool) migrate.Progress {
	t.Helper()
	var last migrate.Progress
	crashed, err := func() (crashed bool, err error) {
		defer func() {
			if r := recover(); r != nil {
				if r != "crash" {
					panic(r)
				}
				crashed = true
			}
		}()
		_, err = migrate.Run(context.Background(), src, dst, dir, migrate.Options{ChunkAccounts: chunk, Progress: func(p migrate.Progress) {
			last = p
			if crash(p) {
				panic("crash")
			}
		}})
		return false, err
	}()
	if !crashed {
		t.Fatalf("run returned (%v) instead of crashing", err)
	}
	return last
}

// resumeExpectingNoCopy resumes a migration that has nothing left to copy and
// checks that it copies nothing again (every report shows the earlier counts),
// verifies the source's root, persists the source's block and removes the
// checkpoint.
func resumeExpectingNoCopy(t *testing.T, src *trie.DB, dir string, before migrate.Progress) {
	t.Helper()
	want, _ := src.StateRoot()
	dst := openRocks(t, dir, vertex.FormatV2)
	defer dst.Close()
	var reports []migrate.Progress
	got, err := migrate.Run(context.Background(), src, dst, dir, migrate.Options{ChunkAccounts: 1, Progress: func(p migrate.Progress) {
		reports = append(reports, p)
	}})
	if err != nil || got != want {
		t.Fatalf("resumed run: root %v, %v; want %v", got, err, want)
	}
	if len(reports) != 1 {
		t.Fatalf("resumed run reported %d times, want once (the final commit): %+v", len(reports), reports)
	}
	if p := reports[0]; p.Accounts != before.Accounts || p.Slots != before.Slots || p.Fraction != 1 {
		t.Fatalf("resumed run reported %d accounts, %d slots, %.3f done; want %d, %d, 1 (nothing re-copied)",
			p.Accounts, p.Slots, p.Fraction, before.Accounts, before.Slots)
	}
	if dst.Block() != src.Block() {
		t.Fatalf("target at block %d, want %d", dst.Block(), src.Block())
	}
	if _, err := os.Stat(migrate.Checkpoint(dir)); !os.IsNotExist(err) {
		t.Fatalf("checkpoint left behind: %v", err)
	}
}

// A run that finished copying but stopped before verifying (checkpoint flag
// "done" set) resumes without copying anything.
func TestMigrateResumesFinishedRun(t *testing.T) {
	src := buildSource(t, vertex.FormatV1, 1000)
	dir := t.TempDir()
	dst := openRocks(t, dir, vertex.FormatV2)
	last := runCrashing(t, src, dst, dir, 300, func(p migrate.Progress) bool { return p.Fraction == 1 })
	dst.Close()
	if last.Accounts != 1000 {
		t.Fatalf("crashed after %d accounts, want 1000", last.Accounts)
	}
	if _, err := os.Stat(migrate.Checkpoint(dir)); err != nil {
		t.Fatalf("no checkpoint after the crash: %v", err)
	}
	resumeExpectingNoCopy(t, src, dir, last)
}

// A run interrupted right after the chunk ending at addrHash 0xff…ff resumes
// with nothing left to copy, rather than wrapping around to key zero and
// copying everything again.
func TestMigrateResumesAfterHighestKey(t *testing.T) {
	src := buildSource(t, vertex.FormatV1, 599)
	var top hashkey.Hash
	for i := range top {
		top[i] = 0xff
	}
	tx := src.Begin()
	if err := tx.UpdateAccount(top, trie.Account{Nonce: 1, Balance: *uint256.NewInt(5)}); err != nil {
		t.Fatal(err)
	}
	if err := tx.UpdateStorage(top, hashkey.Hash{1}, uint256.NewInt(9)); err != nil {
		t.Fatal(err)
	}
	if err := src.Persist(tx, 78); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	dst := openRocks(t, dir, vertex.FormatV2)
	// 600 accounts in chunks of 300: the second chunk ends at 0xff…ff and is
	// checkpointed before the final commit; crash right there.
	last := runCrashing(t, src, dst, dir, 300, func(p migrate.Progress) bool { return p.Accounts == 600 })
	if last.Last != top {
		t.Fatalf("crashed at %v, want the chunk ending at %v", last.Last, top)
	}
	// The checkpoint (docs/format.md §8) must say "started", not "done": the
	// crash came before the final commit.
	if b, err := os.ReadFile(migrate.Checkpoint(dir)); err != nil || len(b) != 87 || b[86] != 1 {
		t.Fatalf("checkpoint after the crash: %x, %v; want 87 bytes with flags 1", b, err)
	}
	if dst.Block() != 0 {
		t.Fatalf("interrupted target at block %d, want 0", dst.Block())
	}
	dst.Close()
	resumeExpectingNoCopy(t, src, dir, last)
}

func TestMigrateRefusesForeignTarget(t *testing.T) {
	src := buildSource(t, vertex.FormatV1, 10)
	other := buildSource(t, vertex.FormatV2, 20)
	if _, err := migrate.Run(context.Background(), src, other, t.TempDir(), migrate.Options{}); err == nil {
		t.Fatal("migrated into a non-empty target without a checkpoint")
	}
}
