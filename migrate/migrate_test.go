package migrate_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/internal/trietest"
	"github.com/hexstate/hexstate/migrate"
	"github.com/hexstate/hexstate/rocks"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
	"github.com/holiman/uint256"
)

// openRocks opens (creating) a RocksDB-backed database of format f in dir.
func openRocks(t testing.TB, dir string, f vertex.Format, ro bool) (*trie.DB, trie.Backend) {
	t.Helper()
	store, err := rocks.Open(dir, &rocks.Options{ReadOnly: ro})
	trietest.Must(t, err, "rocks.Open")
	db, err := trie.Open(store, &trie.Options{Format: f})
	trietest.Must(t, err, "trie.Open")
	return db, store
}

// loadedRocks is a RocksDB database of format f in a new directory holding
// accts (built by the StateLoader at block 77), reopened read-only.
func loadedRocks(t testing.TB, f vertex.Format, accts []trie.AccountLeaf) (*trie.DB, trie.Backend, string) {
	t.Helper()
	dir := t.TempDir()
	db, _ := openRocks(t, dir, f, false)
	trietest.LoadState(t, db, accts, 77)
	trietest.Must(t, db.Close(), "Close")
	db, b := openRocks(t, dir, f, true)
	t.Cleanup(func() { db.Close() })
	return db, b, dir
}

// builderStore is the in-memory store of format f the StateLoader makes from
// accts at block 77.
func builderStore(t testing.TB, f vertex.Format, accts []trie.AccountLeaf) (*trie.DB, trie.Backend) {
	t.Helper()
	b := trie.NewMemoryBackend()
	db, err := trie.Open(b, &trie.Options{Format: f})
	trietest.Must(t, err, "Open")
	trietest.LoadState(t, db, accts, 77)
	return db, b
}

// migrateTo migrates src into a new RocksDB directory of format f.
func migrateTo(t testing.TB, src *trie.DB, f vertex.Format, opts migrate.Options) (*trie.DB, trie.Backend, string) {
	t.Helper()
	dir := t.TempDir()
	dst, _ := openRocks(t, dir, f, false)
	t.Cleanup(func() { dst.Close() })
	res, err := migrate.Run(context.Background(), src, dst, dir, opts)
	trietest.Must(t, err, "migrate to %v", f)
	if want := trietest.DBRoot(t, src); res.Root != want || trietest.DBRoot(t, dst) != want {
		t.Fatalf("root %v, want %v", res.Root, want)
	}
	if _, err := os.Stat(migrate.Checkpoint(dir)); err != nil {
		t.Fatalf("the checkpoint is gone before Finish: %v", err)
	}
	trietest.Must(t, migrate.Finish(dst, dir), "Finish")
	if _, err := os.Stat(migrate.Checkpoint(dir)); !os.IsNotExist(err) {
		t.Fatalf("checkpoint left behind: %v", err)
	}
	dst, b := openRocks(t, dir, f, false)
	t.Cleanup(func() { dst.Close() })
	return dst, b, dir
}

// sameState fails t unless a and b hold the same accounts, slots and proofs.
func sameState(t testing.TB, a, b *trie.DB, accts []trie.AccountLeaf) {
	t.Helper()
	fa, fb := a.Begin(), b.Begin()
	defer fa.Rollback()
	defer fb.Rollback()
	da, db := trietest.DumpState(t, fa), trietest.DumpState(t, fb)
	if len(da) != len(accts) || len(db) != len(accts) {
		t.Fatalf("%d and %d accounts, want %d", len(da), len(db), len(accts))
	}
	for i := range accts {
		x, y := &da[i], &db[i]
		if x.AddrHash != y.AddrHash || x.Account != y.Account || len(x.Storage) != len(y.Storage) {
			t.Fatalf("account %d differs", i)
		}
		for j := range x.Storage {
			if x.Storage[j] != y.Storage[j] {
				t.Fatalf("account %d slot %d differs", i, j)
			}
			pa, err := fa.StorageProof(x.AddrHash, x.Storage[j].Hash)
			trietest.Must(t, err, "StorageProof")
			pb, err := fb.StorageProof(x.AddrHash, x.Storage[j].Hash)
			trietest.Must(t, err, "StorageProof")
			sameProof(t, pa, pb)
		}
		pa, err := fa.AccountProof(x.AddrHash)
		trietest.Must(t, err, "AccountProof")
		pb, err := fb.AccountProof(x.AddrHash)
		trietest.Must(t, err, "AccountProof")
		sameProof(t, pa, pb)
	}
}

func sameProof(t testing.TB, a, b [][]byte) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("proofs of %d and %d nodes", len(a), len(b))
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			t.Fatalf("proof node %d differs", i)
		}
	}
}

// TestRoundTrip migrates v1 → v2 → v1: the v2 copy is the builder's v2 store
// byte for byte, the v1 copy the original byte for byte, every account, slot
// and proof is the original's; the v2 copy then runs blocks and reopens like
// the builder's.
func TestRoundTrip(t *testing.T) {
	accts := trietest.StateAccounts(5000, 11)
	v1, v1b, _ := loadedRocks(t, vertex.FormatV1, accts)
	v2, v2b, v2dir := migrateTo(t, v1, vertex.FormatV2, migrate.Options{Verify: migrate.VerifyFull})
	ref, refb := builderStore(t, vertex.FormatV2, accts)
	trietest.SameRecords(t, v2b, refb)
	back, backb, _ := migrateTo(t, v2, vertex.FormatV1, migrate.Options{})
	trietest.SameRecords(t, backb, v1b)
	sameState(t, v1, back, accts)
	sameState(t, v1, v2, accts)

	// Blocks on the copy and on the builder's store give the same records.
	for blk := uint64(78); blk < 81; blk++ {
		for _, db := range []*trie.DB{v2, ref} {
			fr := db.Begin()
			for i := 0; i < 200; i++ {
				a := &accts[(int(blk)*977+i*31)%len(accts)]
				trietest.Must(t, fr.UpdateAccount(a.AddrHash, trie.Account{Nonce: blk, Balance: *uint256.NewInt(uint64(i))}), "UpdateAccount")
				trietest.Must(t, fr.UpdateStorage(a.AddrHash, hashkey.Keccak256([]byte{byte(i)}), uint256.NewInt(blk)), "UpdateStorage")
			}
			trietest.Must(t, db.Persist(fr, blk), "Persist")
		}
	}
	trietest.Must(t, v2.Close(), "Close")
	v2, v2b = openRocks(t, v2dir, vertex.FormatV2, false)
	defer v2.Close()
	if trietest.DBRoot(t, v2) != trietest.DBRoot(t, ref) || v2.Block() != 80 {
		t.Fatalf("reopened copy at block %d differs from the builder's store", v2.Block())
	}
	trietest.SameRecords(t, v2b, refb)
	fr := v2.Begin()
	defer fr.Rollback()
	trietest.Must(t, fr.Check(), "Check")
}

// TestGrownSource migrates stores grown by random inserts (the hard case
// for a v1 source: scattered IDs) both ways: each copy is the builder's
// store of the same accounts.
func TestGrownSource(t *testing.T) {
	accts := trietest.StateAccounts(4000, 12)
	for _, f := range trietest.Formats {
		t.Run(f.String(), func(t *testing.T) {
			dir := t.TempDir()
			db, _ := openRocks(t, dir, f, false)
			block := trietest.GrowState(t, db, accts, 500, 13)
			trietest.Must(t, db.Close(), "Close")
			src, _ := openRocks(t, dir, f, true)
			defer src.Close()
			to := vertex.FormatV2
			if f == to {
				to = vertex.FormatV1
			}
			dst, b, _ := migrateTo(t, src, to, migrate.Options{Verify: migrate.VerifyFull})
			_, refb := builderStore(t, to, accts)
			recs := trietest.Records(t, b)
			refs := trietest.Records(t, refb)
			if len(recs) != len(refs) || dst.Block() != block {
				t.Fatalf("%d records at block %d, builder's %d", len(recs), dst.Block(), len(refs))
			}
			for id, r := range refs {
				if !bytes.Equal(recs[id], r) {
					t.Fatalf("record %d differs from the builder's", id)
				}
			}
			sameState(t, src, dst, accts)
		})
	}
}

// TestResumes interrupts a migration after each of several checkpoints and
// runs it again: it resumes, and the target is what one run makes.
func TestResumes(t *testing.T) {
	accts := trietest.StateAccounts(6000, 14)
	src, _, _ := loadedRocks(t, vertex.FormatV1, accts)
	_, refb := builderStore(t, vertex.FormatV2, accts)
	for _, stopAt := range []uint64{1, 3000, 9000} {
		dir := t.TempDir()
		dst, _ := openRocks(t, dir, vertex.FormatV2, false)
		ctx, cancel := context.WithCancel(context.Background())
		_, err := migrate.Run(ctx, src, dst, dir, migrate.Options{CheckpointRecords: 500, Progress: func(p migrate.Progress) {
			if p.Records >= stopAt {
				cancel()
			}
		}})
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("interrupted run: %v", err)
		}
		trietest.Must(t, dst.Close(), "Close")
		dst, b := openRocks(t, dir, vertex.FormatV2, false)
		res, err := migrate.Run(context.Background(), src, dst, dir, migrate.Options{})
		trietest.Must(t, err, "resumed run")
		if !res.Resumed {
			t.Fatal("the second run did not resume")
		}
		trietest.SameRecords(t, b, refb)
		trietest.Must(t, migrate.Finish(dst, dir), "Finish")
	}
}

// TestResumesAfterCommit: a run stopped after the copy committed but before
// the checkpoint said so (a kill while the commit compacts the store) is
// resumed by verifying, not by copying again.
func TestResumesAfterCommit(t *testing.T) {
	accts := trietest.StateAccounts(3000, 15)
	src, _, _ := loadedRocks(t, vertex.FormatV1, accts)
	root := trietest.DBRoot(t, src)
	dir := t.TempDir()
	dst, _ := openRocks(t, dir, vertex.FormatV2, false)
	_, err := dst.CopyFrom(context.Background(), src, trie.CopyOptions{Block: src.Block()})
	trietest.Must(t, err, "CopyFrom")
	cp := append([]byte("hxmig2"), root[:]...) // docs/format.md §8: not done, no copy state
	trietest.Must(t, os.WriteFile(migrate.Checkpoint(dir), append(cp, 0), 0o644), "writing the checkpoint")
	res, err := migrate.Run(context.Background(), src, dst, dir, migrate.Options{LeafIndex: true})
	trietest.Must(t, err, "resumed run")
	if !res.Resumed || res.Root != root || res.Proofs == 0 {
		t.Fatalf("resumed %v, root %v (want %v), %d proofs", res.Resumed, res.Root, root, res.Proofs)
	}
	if res.LeafEntries < uint64(len(accts)) || res.LeafCopied != src.HasLeafIndex() {
		t.Fatalf("a leaf index of %d entries for %d accounts (copied: %v; the source has one: %v)",
			res.LeafEntries, len(accts), res.LeafCopied, src.HasLeafIndex())
	}
	rep, err := dst.Check(context.Background(), nil) // compares the index with the trie too
	trietest.Must(t, err, "Check")
	trietest.Must(t, rep.Err(), "Check's report")
	trietest.Must(t, migrate.Finish(dst, dir), "Finish")
	if _, err := os.Stat(migrate.Checkpoint(dir)); !os.IsNotExist(err) {
		t.Fatalf("the checkpoint is still there: %v", err)
	}
}

// TestCreate: a target made by Create is taken as a migration's own and
// started from the beginning (not resumed); a Create that fails leaves no
// target, and the next one clears what it left.
func TestCreate(t *testing.T) {
	accts := trietest.StateAccounts(3000, 16)
	src, _, _ := loadedRocks(t, vertex.FormatV1, accts)
	root := trietest.DBRoot(t, src)
	dir := t.TempDir() + "/target"
	makeStore := func(d string) error {
		db, _ := openRocks(t, d, vertex.FormatV2, false)
		return db.Close()
	}
	failed := errors.New("killed")
	err := migrate.Create(dir, root, func(d string) error { makeStore(d); return failed })
	if !errors.Is(err, failed) {
		t.Fatalf("failed Create: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a failed Create left the target: %v", err)
	}
	trietest.Must(t, migrate.Create(dir, root, makeStore), "Create")
	if _, err := os.Stat(dir + ".creating"); !os.IsNotExist(err) {
		t.Fatalf("Create left its temporary directory: %v", err)
	}
	dst, _ := openRocks(t, dir, vertex.FormatV2, false)
	res, err := migrate.Run(context.Background(), src, dst, dir, migrate.Options{})
	trietest.Must(t, err, "Run")
	if res.Resumed || res.Root != root {
		t.Fatalf("a created target's first run: resumed %v, root %v, want %v", res.Resumed, res.Root, root)
	}
	trietest.Must(t, migrate.Finish(dst, dir), "Finish")
}

// TestRefusesForeignTarget: a target holding a state and no checkpoint is
// refused before anything is written.
func TestRefusesForeignTarget(t *testing.T) {
	accts := trietest.StateAccounts(100, 15)
	src, _, _ := loadedRocks(t, vertex.FormatV1, accts)
	dir := t.TempDir()
	dst, _ := openRocks(t, dir, vertex.FormatV2, false)
	defer dst.Close()
	trietest.LoadState(t, dst, accts, 5)
	if _, err := migrate.Run(context.Background(), src, dst, dir, migrate.Options{}); !errors.Is(err, migrate.ErrTargetNotEmpty) {
		t.Fatalf("foreign target: %v", err)
	}
	if _, err := os.Stat(migrate.Checkpoint(dir)); !os.IsNotExist(err) {
		t.Fatalf("checkpoint written into a foreign target: %v", err)
	}
}

// TestCheckPaths covers the path refusals.
func TestCheckPaths(t *testing.T) {
	d := t.TempDir()
	src := d + "/db"
	trietest.Must(t, os.Mkdir(src, 0o755), "Mkdir")
	trietest.Must(t, os.Symlink(src, d+"/link"), "Symlink")
	for _, dst := range []string{src, src + "/sub", src + "/a/b", d + "/link/sub", d} {
		if err := migrate.CheckPaths(src, dst, ""); !errors.Is(err, migrate.ErrNested) {
			t.Errorf("target %s: %v", dst, err)
		}
	}
	trietest.Must(t, migrate.CheckPaths(src, d+"/db.v2", ""), "sibling target")
	trietest.Must(t, migrate.CheckPaths(src, d+"/dbx", ""), "sibling with a common prefix")
	trietest.Must(t, os.Mkdir(d+"/db.v1.bak", 0o755), "Mkdir")
	if err := migrate.CheckPaths(src, d+"/db.v2", d+"/db.v1.bak"); !errors.Is(err, migrate.ErrBackupExists) {
		t.Errorf("existing backup: %v", err)
	}
}

// TestRefusesEarlierCopyState: a checkpoint whose copy state an earlier
// version wrote (its IDs handed out in another order) is refused with
// trie.ErrCopyVersion, the checkpoint left as it was, rather than resumed
// into a mixed store or started over behind the operator's back.
func TestRefusesEarlierCopyState(t *testing.T) {
	accts := trietest.StateAccounts(3000, 17)
	src, _, _ := loadedRocks(t, vertex.FormatV1, accts)
	root := trietest.DBRoot(t, src)
	for _, magic := range []string{"hxcp2", "hxrb2"} {
		dir := t.TempDir()
		dst, _ := openRocks(t, dir, vertex.FormatV2, false)
		state := append([]byte(magic), make([]byte, 60)...)
		state[5] = byte(vertex.FormatV2)
		cp := append(append([]byte("hxmig2"), root[:]...), 0) // docs/format.md §8: not done
		cp = append(cp, state...)
		trietest.Must(t, os.WriteFile(migrate.Checkpoint(dir), cp, 0o644), "writing the checkpoint")
		_, err := migrate.Run(context.Background(), src, dst, dir, migrate.Options{})
		if !errors.Is(err, trie.ErrCopyVersion) {
			t.Fatalf("%s: %v, want ErrCopyVersion", magic, err)
		}
		if got, _ := os.ReadFile(migrate.Checkpoint(dir)); !bytes.Equal(got, cp) {
			t.Fatalf("%s: the checkpoint changed", magic)
		}
		trietest.Must(t, dst.Close(), "Close")
	}
}
