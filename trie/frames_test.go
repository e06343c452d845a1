package trie_test

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/hexstate/hexstate/internal/trietest"

	"github.com/holiman/uint256"

	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// This file tests the frame model: reads falling through frames to the persisted
// base, forks, Persist abandoning forks (ErrStale), Rollback, sealing (ErrSealed),
// reopening, and account deletion taking the account's storage with it. Every
// root is checked against two references built independently of the frame tree:
// a fresh single-frame database holding the same state (trietest.RebuildRoot) and the
// generic trie fed the RLP of the accounts and slots (trietest.OracleRoot).
//
// The tests here run on the memory backend only; the ones that run on every
// store (and their model helpers) are in internal/trietest (frames.go, state.go),
// called from stores_test.go here and from package rocks.

// TestFramesSealed: a frame with a child, or persisted, refuses writes with
// ErrSealed but still reads; its children write.
func TestFramesSealed(t *testing.T) {
	trietest.EachFormat(t, func(t *testing.T, f vertex.Format) {
		db := trietest.NewStore(t, trietest.Memory).Open(f)
		m := trietest.Model{}
		p := db.Begin()
		trietest.PutAccount(t, p, m, trietest.Addr(0), trietest.Acc(1, 1))
		trietest.PutSlot(t, p, m, trietest.Addr(0), trietest.Slot(0), 1)
		c := p.Begin()
		trietest.ExpectErr(t, p, trie.ErrSealed, false, "frame with a child")
		trietest.CheckState(t, p, m)
		trietest.CheckRoot(t, p, f, m, "sealed p")

		mc := m.Clone()
		trietest.PutAccount(t, c, mc, trietest.Addr(1), trietest.Acc(2, 2))
		if err := db.Persist(c, 1); err != nil {
			t.Fatal(err)
		}
		trietest.ExpectErr(t, c, trie.ErrSealed, false, "persisted frame")
		trietest.CheckState(t, c, mc)
		d := c.Begin()
		trietest.PutAccount(t, d, mc, trietest.Addr(2), trietest.Acc(3, 3))
		trietest.CheckRoot(t, d, f, mc, "child of persisted frame")
	})
}

// TestFramesPersistTwice: persisting the frame that already is the base (a
// retried Persist) must not panic or break the DB.
func TestFramesPersistTwice(t *testing.T) {
	trietest.EachFormat(t, func(t *testing.T, f vertex.Format) {
		db := trietest.NewStore(t, trietest.Memory).Open(f)
		m := trietest.Model{}
		fr := db.Begin()
		trietest.PutAccount(t, fr, m, trietest.Addr(0), trietest.Acc(1, 1))
		if err := db.Persist(fr, 1); err != nil {
			t.Fatal(err)
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("second Persist of the same frame panicked: %v", r)
				}
			}()
			if err := db.Persist(fr, 1); err != nil {
				t.Fatalf("second Persist(fr, 1) = %v, want nil (no-op)", err)
			}
			if err := db.Persist(fr, 5); err == nil {
				t.Fatal("Persist of the base under another block number succeeded")
			}
		}()
		if db.Block() != 1 {
			t.Fatalf("Block = %d after repeated Persist, want 1", db.Block())
		}
		trietest.CheckState(t, fr, m)
		n := db.Begin()
		trietest.CheckState(t, n, m)
		trietest.PutAccount(t, n, m, trietest.Addr(1), trietest.Acc(2, 2))
		trietest.CheckRoot(t, n, f, m, "frame after a repeated Persist")
		if err := db.Persist(n, 2); err != nil {
			t.Fatal(err)
		}
		if db.Block() != 2 {
			t.Fatalf("Block = %d, want 2", db.Block())
		}
	})
}

// TestFramesClosed: everything answers ErrClosed after Close.
func TestFramesClosed(t *testing.T) {
	db := trietest.NewStore(t, trietest.Memory).Open(vertex.FormatV2)
	fr := db.Begin()
	trietest.PutAccount(t, fr, trietest.Model{}, trietest.Addr(0), trietest.Acc(1, 1))
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	trietest.ExpectErr(t, fr, trie.ErrClosed, true, "after Close")
	if _, err := db.StateRoot(); !errors.Is(err, trie.ErrClosed) {
		t.Fatalf("DB.StateRoot after Close = %v", err)
	}
	if err := db.Persist(fr, 1); !errors.Is(err, trie.ErrClosed) {
		t.Fatalf("Persist after Close = %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
}

// TestFramesNoAccount: UpdateStorage on an absent (or deleted) account fails
// with ErrNoAccount and changes nothing.
func TestFramesNoAccount(t *testing.T) {
	trietest.EachFormat(t, func(t *testing.T, f vertex.Format) {
		db := trietest.NewStore(t, trietest.Memory).Open(f)
		m := trietest.Genesis(t, db, 20)
		fr := db.Begin()
		if err := fr.UpdateStorage(trietest.Addr(999), trietest.Slot(0), uint256.NewInt(1)); !errors.Is(err, trie.ErrNoAccount) {
			t.Fatalf("UpdateStorage(absent) = %v, want ErrNoAccount", err)
		}
		trietest.DropAccount(t, fr, m, trietest.Addr(3))
		if err := fr.UpdateStorage(trietest.Addr(3), trietest.Slot(0), uint256.NewInt(1)); !errors.Is(err, trie.ErrNoAccount) {
			t.Fatalf("UpdateStorage(deleted) = %v, want ErrNoAccount", err)
		}
		if err := fr.DeleteAccount(trietest.Addr(999)); err != nil {
			t.Fatalf("DeleteAccount(absent) = %v", err)
		}
		trietest.CheckState(t, fr, m, trietest.Addr(999), trietest.Addr(3))
		trietest.CheckRoot(t, fr, f, m, "after refused writes")
	})
}

// TestFramesLongChain reads through chains longer than a persist cadence,
// where a read that misses a frame asks the index of the frames below it
// (framestore.ChainIndex, shared down the line) which frame holds the ID:
// every frame of an 80-frame chain, of a fork off frame 60 and of frames
// above a frame persisted mid-chain (whose index still names the folded
// frames) must read its own state and hash to its model's root.
func TestFramesLongChain(t *testing.T) {
	trietest.EachFormat(t, func(t *testing.T, f vertex.Format) {
		db := trietest.NewStore(t, trietest.Memory).Open(f)
		r := rand.New(rand.NewPCG(uint64(f), 80))
		block := func(fr *trie.Frame, m trietest.Model, b int) {
			for i := 0; i < 12; i++ {
				a := trietest.Addr(r.IntN(60))
				switch {
				case m[a] != nil && r.IntN(8) == 0:
					trietest.DropAccount(t, fr, m, a)
				default:
					trietest.PutAccount(t, fr, m, a, trietest.Acc(uint64(b), uint64(i+1)))
					trietest.PutSlot(t, fr, m, a, trietest.Slot(r.IntN(6)), uint64(r.IntN(3)))
				}
			}
		}
		type step struct {
			fr *trie.Frame
			m  trietest.Model
		}
		var chain []step
		fr, m := db.Begin(), trietest.Model{}
		for b := 1; b <= 80; b++ {
			block(fr, m, b)
			chain = append(chain, step{fr, m.Clone()})
			if b == 50 {
				// Persist a frame in the middle of the chain and go on above it.
				if err := db.Persist(chain[44].fr, 45); err != nil {
					t.Fatal(err)
				}
			}
			fr = fr.Begin()
		}
		fork, fm := chain[59].fr.Begin(), chain[59].m.Clone()
		for b := 0; b < 20; b++ {
			block(fork, fm, 1000+b)
			fork = fork.Begin()
		}
		trietest.CheckState(t, fork, fm)
		trietest.CheckRoot(t, fork, f, fm, "fork off frame 60")
		for i := 44; i < len(chain); i += 7 {
			trietest.CheckState(t, chain[i].fr, chain[i].m)
			trietest.CheckRoot(t, chain[i].fr, f, chain[i].m, "frame of the chain")
		}
		if err := db.Persist(chain[79].fr, 80); err != nil {
			t.Fatal(err)
		}
		trietest.CheckState(t, chain[79].fr, chain[79].m)
	})
}
