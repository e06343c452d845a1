package trie_test

import (
	"encoding/binary"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/internal/trietest"
	"github.com/hexstate/hexstate/trie"
	"github.com/holiman/uint256"
)

// These tests pin what bad calls do: each returns an error (never a panic, never
// a silent acceptance) and leaves the database as it was.

func misuseDB(t *testing.T) *trie.DB {
	t.Helper()
	db, err := trie.Open(trie.NewMemoryBackend(), nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func misuseAddr(i int) hashkey.Hash {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(i))
	return hashkey.Keccak256([]byte("misuse"), b[:])
}

func misuseAccount(i int) trie.Account {
	acc := trie.Account{Nonce: uint64(i) + 1}
	acc.Balance.SetUint64(uint64(i) * 7)
	return acc
}

func misuseWrite(t *testing.T, fr *trie.Frame, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if err := fr.UpdateAccount(misuseAddr(i), misuseAccount(i)); err != nil {
			t.Fatalf("UpdateAccount(%d): %v", i, err)
		}
	}
}

func TestMisuseNilFrame(t *testing.T) {
	db := misuseDB(t)
	if err := db.Persist(nil, 1); !errors.Is(err, trie.ErrNilFrame) {
		t.Fatalf("Persist(nil, 1) = %v, want ErrNilFrame", err)
	}
	if db.Block() != 0 {
		t.Fatalf("Block() = %d after a refused persist, want 0", db.Block())
	}
	for name, fr := range map[string]*trie.Frame{"nil": nil, "zero": new(trie.Frame)} {
		if err := db.Persist(fr, 1); !errors.Is(err, trie.ErrNilFrame) {
			t.Errorf("%s frame: Persist = %v, want ErrNilFrame", name, err)
		}
		if err := fr.UpdateAccount(misuseAddr(1), misuseAccount(1)); !errors.Is(err, trie.ErrNilFrame) {
			t.Errorf("%s frame: UpdateAccount = %v, want ErrNilFrame", name, err)
		}
		if err := fr.Begin().UpdateAccount(misuseAddr(1), misuseAccount(1)); !errors.Is(err, trie.ErrNilFrame) {
			t.Errorf("%s frame: Begin().UpdateAccount = %v, want ErrNilFrame", name, err)
		}
		if err := fr.UpdateStorage(misuseAddr(1), misuseAddr(2), uint256.NewInt(1)); !errors.Is(err, trie.ErrNilFrame) {
			t.Errorf("%s frame: UpdateStorage = %v, want ErrNilFrame", name, err)
		}
		if err := fr.DeleteAccount(misuseAddr(1)); !errors.Is(err, trie.ErrNilFrame) {
			t.Errorf("%s frame: DeleteAccount = %v, want ErrNilFrame", name, err)
		}
		if _, _, err := fr.Account(misuseAddr(1)); !errors.Is(err, trie.ErrNilFrame) {
			t.Errorf("%s frame: Account = %v, want ErrNilFrame", name, err)
		}
		if _, err := fr.Storage(misuseAddr(1), misuseAddr(2)); !errors.Is(err, trie.ErrNilFrame) {
			t.Errorf("%s frame: Storage = %v, want ErrNilFrame", name, err)
		}
		if _, err := fr.StateRoot(); !errors.Is(err, trie.ErrNilFrame) {
			t.Errorf("%s frame: StateRoot = %v, want ErrNilFrame", name, err)
		}
		if _, err := fr.AccountProof(misuseAddr(1)); !errors.Is(err, trie.ErrNilFrame) {
			t.Errorf("%s frame: AccountProof = %v, want ErrNilFrame", name, err)
		}
		if err := fr.Prefetch([]hashkey.Hash{misuseAddr(1)}, nil); !errors.Is(err, trie.ErrNilFrame) {
			t.Errorf("%s frame: Prefetch = %v, want ErrNilFrame", name, err)
		}
		if err := fr.PrefetchUpperLevels(); !errors.Is(err, trie.ErrNilFrame) {
			t.Errorf("%s frame: PrefetchUpperLevels = %v, want ErrNilFrame", name, err)
		}
		if it := fr.Accounts(hashkey.Hash{}); it.Next() || !errors.Is(it.Err(), trie.ErrNilFrame) {
			t.Errorf("%s frame: Accounts iterator error = %v, want ErrNilFrame", name, it.Err())
		}
		fr.Rollback() // a no-op, not a panic
	}
}

func TestMisuseForeignFrame(t *testing.T) {
	db, other := misuseDB(t), misuseDB(t)
	fr := other.Begin()
	misuseWrite(t, fr, 0, 10)
	err := db.Persist(fr, 1)
	if !errors.Is(err, trie.ErrForeignFrame) {
		t.Fatalf("Persist(frame of another DB) = %v, want ErrForeignFrame", err)
	}
	if !strings.Contains(err.Error(), "another database") {
		t.Errorf("error %q does not say the frame belongs to another database", err)
	}
	for name, d := range map[string]*trie.DB{"target": db, "owner": other} {
		root, err := d.StateRoot()
		if err != nil || root != hashkey.EmptyRoot || d.Block() != 0 {
			t.Errorf("%s after the refused persist: root %v, block %d, err %v; want the empty state at block 0", name, root, d.Block(), err)
		}
	}
	if err := other.Persist(fr, 1); err != nil { // the frame is still good for its own DB
		t.Fatalf("Persist on the owner: %v", err)
	}
}

func TestMisuseBlockOrder(t *testing.T) {
	db := misuseDB(t)
	// A new database is at block 0: persisting block 0 is allowed.
	genesis := db.Begin()
	misuseWrite(t, genesis, 0, 10)
	if err := db.Persist(genesis, 0); err != nil {
		t.Fatalf("Persist(genesis, 0) on a new database: %v", err)
	}
	tx := genesis.Begin()
	misuseWrite(t, tx, 10, 20)
	if err := db.Persist(tx, 100); err != nil {
		t.Fatalf("Persist(tx, 100): %v", err)
	}
	if err := db.Persist(tx, 100); err != nil { // a repeated persist stays a no-op
		t.Fatalf("repeated Persist(tx, 100) = %v, want nil", err)
	}
	want, _ := db.StateRoot()
	child := tx.Begin()
	misuseWrite(t, child, 20, 30)
	err := db.Persist(child, 5)
	if !errors.Is(err, trie.ErrBlockOrder) {
		t.Fatalf("Persist(child, 5) after block 100 = %v, want ErrBlockOrder", err)
	}
	if !strings.Contains(err.Error(), "100") || !strings.Contains(err.Error(), "5") {
		t.Errorf("error %q does not name both blocks", err)
	}
	if got, _ := db.StateRoot(); db.Block() != 100 || got != want {
		t.Fatalf("after the refused persist: block %d root %v, want block 100 root %v", db.Block(), got, want)
	}
	// The refused frame is untouched: it persists under a valid block.
	if err := db.Persist(child, 101); err != nil {
		t.Fatalf("Persist(child, 101): %v", err)
	}
	if db.Block() != 101 {
		t.Fatalf("Block() = %d, want 101", db.Block())
	}
	// An equal block is not above it either, and the refused frame is left
	// as it was.
	next := child.Begin()
	misuseWrite(t, next, 30, 40)
	if err := db.Persist(next, 101); !errors.Is(err, trie.ErrBlockOrder) {
		t.Fatalf("Persist(next, 101) at block 101 = %v, want ErrBlockOrder", err)
	}
	if err := db.Persist(next, 102); err != nil || db.Block() != 102 {
		t.Fatalf("Persist(next, 102) = %v, Block() = %d", err, db.Block())
	}
}

// TestMisuseBlockZeroRepeats: block 0 stands for "before any block", so a
// database at block 0 accepts block 0 again (a state loaded in several
// persists), and then only blocks above 0.
func TestMisuseBlockZeroRepeats(t *testing.T) {
	db := misuseDB(t)
	fr := db.Begin()
	misuseWrite(t, fr, 0, 10)
	if err := db.Persist(fr, 0); err != nil {
		t.Fatalf("first Persist at block 0: %v", err)
	}
	next := fr.Begin()
	misuseWrite(t, next, 10, 20)
	if err := db.Persist(next, 0); err != nil {
		t.Fatalf("second Persist at block 0: %v", err)
	}
	last := next.Begin()
	misuseWrite(t, last, 20, 30)
	if err := db.Persist(last, 7); err != nil || db.Block() != 7 {
		t.Fatalf("Persist(last, 7) = %v, Block() = %d", err, db.Block())
	}
	again := last.Begin()
	misuseWrite(t, again, 30, 40)
	if err := db.Persist(again, 0); !errors.Is(err, trie.ErrBlockOrder) {
		t.Fatalf("Persist at block 0 after block 7 = %v, want ErrBlockOrder", err)
	}
}

// TestMisuseWriteOverlapsRead overlaps a write with a read deterministically:
// the write fails with ErrConcurrentWrite and changes nothing; reads go on.
func TestMisuseWriteOverlapsRead(t *testing.T) {
	db := misuseDB(t)
	fr := db.Begin()
	misuseWrite(t, fr, 0, 100)
	before, err := fr.StateRoot()
	if err != nil {
		t.Fatal(err)
	}
	release := trie.HoldRead(fr)
	writes := map[string]error{
		"UpdateAccount": fr.UpdateAccount(misuseAddr(1000), misuseAccount(1000)),
		"UpdateStorage": fr.UpdateStorage(misuseAddr(1), misuseAddr(2), uint256.NewInt(3)),
		"DeleteAccount": fr.DeleteAccount(misuseAddr(2)),
		"Put":           trietest.G(fr).Put([]byte("k"), []byte("v")),
		"Delete":        trietest.G(fr).Delete([]byte("k")),
		"BulkLoad":      fr.BulkLoadAccounts(nil),
	}
	for name, err := range writes {
		if !errors.Is(err, trie.ErrConcurrentWrite) {
			t.Errorf("%s during a read = %v, want ErrConcurrentWrite", name, err)
		}
	}
	if _, ok, err := fr.Account(misuseAddr(2)); !ok || err != nil { // reads share the frame
		t.Errorf("Account during a read = %v, %v; want the account", ok, err)
	}
	release()
	if after, err := fr.StateRoot(); err != nil || after != before {
		t.Fatalf("root after the refused writes %v (%v), want %v", after, err, before)
	}
	if err := fr.UpdateAccount(misuseAddr(1000), misuseAccount(1000)); err != nil {
		t.Fatalf("UpdateAccount once the read is over: %v", err)
	}
}

// TestMisuseConcurrentWrites writes disjoint accounts to one frame from several
// goroutines, with readers and StateRoot calls on the side: every write either
// succeeds or fails with ErrConcurrentWrite, and the frame holds exactly the
// writes that succeeded.
func TestMisuseConcurrentWrites(t *testing.T) {
	const writers, each = 8, 2500
	db := misuseDB(t)
	fr := db.Begin()
	ok := make([][]bool, writers)
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		ok[w] = make([]bool, each)
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for j := 0; j < each; j++ {
				i := w*each + j
				var err error
				if j%5 == 4 { // every account with storage
					err = fr.UpdateStorage(misuseAddr(i-1), misuseAddr(j), uint256.NewInt(uint64(i)))
				} else {
					err = fr.UpdateAccount(misuseAddr(i), misuseAccount(i))
				}
				switch {
				case err == nil:
					ok[w][j] = true
				case errors.Is(err, trie.ErrConcurrentWrite), j%5 == 4 && errors.Is(err, trie.ErrNoAccount):
				default:
					t.Errorf("writer %d, write %d: %v", w, j, err)
					return
				}
			}
		}(w)
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for r := 0; r < 2; r++ {
		readers.Add(1)
		go func(r int) {
			defer readers.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				var err error
				if r == 0 {
					_, _, err = fr.Account(misuseAddr(n % (writers * each)))
				} else {
					_, err = fr.StateRoot()
				}
				if err != nil {
					t.Errorf("reader %d: %v", r, err)
					return
				}
			}
		}(r)
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	got, err := fr.StateRoot()
	if err != nil {
		t.Fatal(err)
	}

	serial := misuseDB(t).Begin()
	failed := 0
	for w := range ok {
		for j, done := range ok[w] {
			i := w*each + j
			switch {
			case !done:
				failed++
			case j%5 == 4:
				if err := serial.UpdateStorage(misuseAddr(i-1), misuseAddr(j), uint256.NewInt(uint64(i))); err != nil {
					t.Fatalf("serial UpdateStorage(%d): %v", i, err)
				}
			default:
				if err := serial.UpdateAccount(misuseAddr(i), misuseAccount(i)); err != nil {
					t.Fatalf("serial UpdateAccount(%d): %v", i, err)
				}
			}
		}
	}
	want, err := serial.StateRoot()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d of %d writes failed", failed, writers*each)
	if got != want {
		t.Fatalf("concurrent frame's root %v, serial frame of the successful writes %v", got, want)
	}
}

// TestMisuseLoaderBlockOrder: StateLoader.Commit follows Persist's block rule,
// and a refused Commit leaves the load usable.
func TestMisuseLoaderBlockOrder(t *testing.T) {
	db := misuseDB(t)
	if err := db.Persist(db.Begin(), 5); err != nil { // an empty state at block 5
		t.Fatal(err)
	}
	l, err := db.NewStateLoader()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Add([]trie.AccountLeaf{{AddrHash: misuseAddr(1), Account: misuseAccount(1)}}); err != nil {
		t.Fatal(err)
	}
	for _, b := range []uint64{3, 5} {
		if _, err := l.Commit(b); !errors.Is(err, trie.ErrBlockOrder) {
			t.Fatalf("Commit(%d) at block 5 = %v, want ErrBlockOrder", b, err)
		}
	}
	root, err := l.Commit(6)
	if err != nil {
		t.Fatalf("Commit(6) after refused commits: %v", err)
	}
	if got, _ := db.StateRoot(); db.Block() != 6 || got != root {
		t.Fatalf("after Commit(6): block %d root %v, want 6 %v", db.Block(), got, root)
	}
}
