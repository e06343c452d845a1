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
	dst.Close()
	// A second run, on a reopened target, starts after the checkpoint.
	dst = openRocks(t, dir, vertex.FormatV2)
	defer dst.Close()
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
}

func TestMigrateRefusesForeignTarget(t *testing.T) {
	src := buildSource(t, vertex.FormatV1, 10)
	other := buildSource(t, vertex.FormatV2, 20)
	if _, err := migrate.Run(context.Background(), src, other, t.TempDir(), migrate.Options{}); err == nil {
		t.Fatal("migrated into a non-empty target without a checkpoint")
	}
}
