package trie_test

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/internal/trietest"
	"github.com/hexstate/hexstate/trie"
)

// jBlock applies block b's changes (seed: b, fork) to fr and st and returns
// fr's root.
func jBlock(t *testing.T, fr *trie.Frame, st *trietest.BlockState, b, fork uint64) hashkey.Hash {
	t.Helper()
	st.Apply(t, fr, rand.New(rand.NewPCG(b, fork)), int(b), 15)
	return trietest.FrameHash(t, fr)
}

func newBlockState() *trietest.BlockState {
	return &trietest.BlockState{Accts: map[int]trie.Account{}, Slots: map[int]map[int]uint64{}}
}

func (s *jStore) open(t *testing.T, opts trie.Options) *trie.DB {
	t.Helper()
	opts.JournalDir = s.dir
	db, err := trie.Open(s.mem, &opts)
	trietest.Must(t, err, "Open")
	return db
}

type jStore struct {
	mem trie.Backend
	dir string
}

func newJStore(t *testing.T) *jStore {
	return &jStore{mem: trie.NewMemoryBackend(), dir: t.TempDir()}
}

// TestJournalReplay journals a chain of blocks and a fork on a persisted
// base, "crashes" (drops the DB without persisting them) and checks that Open
// rebuilds every frame with its root and state, that the client can carry on
// from the tip, and that a persist trims the journal.
func TestJournalReplay(t *testing.T) {
	s := newJStore(t)
	db := s.open(t, trie.Options{})
	st := newBlockState()
	fr := db.Begin()
	jBlock(t, fr, st, 1, 0)
	trietest.Must(t, db.Persist(fr, 1), "Persist(1)")
	states := map[uint64]*trietest.BlockState{}
	roots := map[uint64]hashkey.Hash{}
	for b := uint64(2); b <= 10; b++ {
		fr = fr.Begin()
		roots[b] = jBlock(t, fr, st, b, 0)
		trietest.Must(t, db.Journal(fr, b), "Journal(%d)", b)
		trietest.Must(t, db.Journal(fr, b), "Journal(%d) again", b) // a no-op
		cp := newBlockState()
		for a, acc := range st.Accts {
			cp.Accts[a] = acc
		}
		for a, sl := range st.Slots {
			cp.Slots[a] = map[int]uint64{}
			for k, v := range sl {
				cp.Slots[a][k] = v
			}
		}
		states[b] = cp
	}
	// A fork on block 5: 6' and 7'.
	fork := db.RecoveredFrame(5, roots[5]) // nil: nothing was recovered yet
	if fork != nil {
		t.Fatal("RecoveredFrame before any replay")
	}
	trietest.Must(t, db.Close(), "Close") // persists nothing: blocks 2..10 live only in the journal

	db = s.open(t, trie.Options{})
	if db.Block() != 1 {
		t.Fatalf("reopened at block %d, want 1", db.Block())
	}
	rec := db.Recovered()
	if len(rec) != 9 {
		t.Fatalf("%d frames recovered, want 9", len(rec))
	}
	for i, r := range rec {
		b := uint64(i + 2)
		if r.Block != b || r.Root != roots[b] {
			t.Fatalf("recovered #%d: block %d root %v, want block %d root %v", i, r.Block, r.Root, b, roots[b])
		}
		if got := trietest.FrameHash(t, r.Frame); got != roots[b] {
			t.Fatalf("block %d: recovered frame hashes to %v, want %v", b, got, roots[b])
		}
		if db.RecoveredFrame(b, roots[b]) != r.Frame {
			t.Fatalf("RecoveredFrame(%d) is not the listed frame", b)
		}
	}
	states[10].Check(t, rec[8].Frame, nil)
	states[4].Check(t, rec[2].Frame, nil)
	if rep, ok := db.JournalReport(); !ok || rep.Entries != 9 || rep.Replayed != 9 || rep.DroppedBytes != 0 {
		t.Fatalf("JournalReport %+v, %v", rep, ok)
	}

	// Fork: 6' on the recovered block 5, journalled beside 6.
	f5 := db.RecoveredFrame(5, roots[5])
	f6b := f5.Begin()
	st5 := states[5]
	root6b := jBlock(t, f6b, st5, 6, 1)
	trietest.Must(t, db.Journal(f6b, 6), "Journal(6')")
	trietest.Must(t, db.Close(), "Close")

	db = s.open(t, trie.Options{})
	if got := len(db.Recovered()); got != 10 {
		t.Fatalf("%d frames recovered with the fork, want 10", got)
	}
	if f := db.RecoveredFrame(6, root6b); f == nil || trietest.FrameHash(t, f) != root6b {
		t.Fatal("the fork's block 6' was not recovered")
	}
	// Carry on from the tip: block 11, persisted; the journal keeps only what
	// lies above it.
	tip := db.RecoveredFrame(10, roots[10])
	fr = tip.Begin()
	st = states[10]
	root11 := jBlock(t, fr, st, 11, 0)
	trietest.Must(t, db.Journal(fr, 11), "Journal(11)")
	fr12 := fr.Begin()
	root12 := jBlock(t, fr12, st, 12, 0)
	trietest.Must(t, db.Journal(fr12, 12), "Journal(12)")
	trietest.Must(t, db.Persist(fr, 11), "Persist(11)")
	trietest.Must(t, db.Flush(), "Flush")
	if _, err := db.RecoveredFrame(6, root6b).StateRoot(); !errors.Is(err, trie.ErrStale) {
		t.Fatalf("the abandoned fork after Persist: %v, want ErrStale", err)
	}
	trietest.Must(t, db.Close(), "Close")
	db = s.open(t, trie.Options{})
	defer db.Close()
	if db.Block() != 11 || trietest.DBRoot(t, db) != root11 {
		t.Fatalf("reopened at block %d, want 11", db.Block())
	}
	rec = db.Recovered()
	if len(rec) != 1 || rec[0].Block != 12 || rec[0].Root != root12 {
		t.Fatalf("after the persist of 11: recovered %+v, want block 12 only", rec)
	}
	if rep, _ := db.JournalReport(); rep.Entries != 1 {
		t.Fatalf("the journal holds %d entries after the trim, want 1", rep.Entries)
	}
	st.Check(t, rec[0].Frame, nil)
}

// TestJournalTornTail cuts the journal inside its last entry and appends
// garbage: Open drops the torn tail, and later entries are readable.
func TestJournalTornTail(t *testing.T) {
	for _, cut := range []string{"inside", "garbage", "header"} {
		t.Run(cut, func(t *testing.T) {
			s := newJStore(t)
			db := s.open(t, trie.Options{})
			st := newBlockState()
			fr := db.Begin()
			var roots []hashkey.Hash
			var sizes []int64
			path := filepath.Join(s.dir, "hexstate-journal")
			for b := uint64(1); b <= 3; b++ {
				if b > 1 {
					fr = fr.Begin()
				}
				roots = append(roots, jBlock(t, fr, st, b, 0))
				trietest.Must(t, db.Journal(fr, b), "Journal(%d)", b)
				fi, err := os.Stat(path)
				trietest.Must(t, err, "stat")
				sizes = append(sizes, fi.Size())
			}
			trietest.Must(t, db.Close(), "Close")
			want := 2
			switch cut {
			case "inside":
				trietest.Must(t, os.Truncate(path, sizes[2]-7), "truncate")
			case "garbage":
				f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
				trietest.Must(t, err, "open")
				f.Write([]byte{0, 0, 0, 40, 1, 2, 3, 4, 5})
				f.Close()
				want = 3
			case "header":
				trietest.Must(t, os.Truncate(path, 5), "truncate")
				want = 0
			}
			db = s.open(t, trie.Options{})
			rep, _ := db.JournalReport()
			if len(db.Recovered()) != want || rep.DroppedBytes == 0 && cut != "header" {
				t.Fatalf("recovered %d frames (report %+v), want %d", len(db.Recovered()), rep, want)
			}
			// Appends after the dropped tail are found by the next Open.
			var fr2 *trie.Frame
			if want > 0 {
				fr2 = db.Recovered()[want-1].Frame.Begin()
			} else {
				fr2 = db.Begin()
				st = newBlockState()
			}
			root := jBlock(t, fr2, st, uint64(want+1), 9)
			trietest.Must(t, db.Journal(fr2, uint64(want+1)), "Journal after the torn tail")
			trietest.Must(t, db.Close(), "Close")
			db = s.open(t, trie.Options{})
			defer db.Close()
			if db.RecoveredFrame(uint64(want+1), root) == nil {
				t.Fatalf("the entry appended after the torn tail was not recovered (%d frames)", len(db.Recovered()))
			}
		})
	}
}

// TestJournalCorrupt: a foreign file is ErrCorruptJournal; NoJournal opens
// the database without it.
func TestJournalCorrupt(t *testing.T) {
	s := newJStore(t)
	trietest.Must(t, os.WriteFile(filepath.Join(s.dir, "hexstate-journal"), []byte("not a journal at all"), 0o644), "write")
	if _, err := trie.Open(s.mem, &trie.Options{JournalDir: s.dir}); !errors.Is(err, trie.ErrCorruptJournal) {
		t.Fatalf("Open with a foreign journal file: %v, want ErrCorruptJournal", err)
	}
	db, err := trie.Open(s.mem, &trie.Options{JournalDir: s.dir, NoJournal: true})
	trietest.Must(t, err, "Open with NoJournal")
	if err := db.Journal(db.Begin(), 1); !errors.Is(err, trie.ErrNoJournal) {
		t.Fatalf("Journal without a journal: %v, want ErrNoJournal", err)
	}
	db.Close()
}

// TestJournalMisuse: gaps, renumbering, nil and foreign frames.
func TestJournalMisuse(t *testing.T) {
	s := newJStore(t)
	db := s.open(t, trie.Options{})
	defer db.Close()
	st := newBlockState()
	fr := db.Begin()
	jBlock(t, fr, st, 1, 0)
	child := fr.Begin()
	jBlock(t, child, st, 2, 0)
	if err := db.Journal(child, 2); !errors.Is(err, trie.ErrJournalGap) {
		t.Fatalf("Journal of a frame whose parent is not journalled: %v, want ErrJournalGap", err)
	}
	trietest.Must(t, db.Journal(fr, 1), "Journal(1)")
	if err := db.Journal(fr, 7); !errors.Is(err, trie.ErrJournalBlock) {
		t.Fatalf("Journal under another block: %v, want ErrJournalBlock", err)
	}
	if err := db.Persist(fr, 3); !errors.Is(err, trie.ErrJournalBlock) {
		t.Fatalf("Persist under another block than journalled: %v, want ErrJournalBlock", err)
	}
	if err := db.Journal(nil, 1); !errors.Is(err, trie.ErrNilFrame) {
		t.Fatalf("Journal(nil): %v", err)
	}
	other, _ := trie.Open(trie.NewMemoryBackend(), nil)
	if err := db.Journal(other.Begin(), 1); !errors.Is(err, trie.ErrForeignFrame) {
		t.Fatalf("Journal of a foreign frame: %v", err)
	}
	// Persisting a frame that was not journalled, then journalling its child:
	// Journal waits for the write so the child's parent is durable.
	trietest.Must(t, db.Journal(child, 2), "Journal(2)")
	trietest.Must(t, db.Persist(child, 2), "Persist(2)")
	c3 := child.Begin()
	jBlock(t, c3, st, 3, 0)
	trietest.Must(t, db.Journal(c3, 3), "Journal(3)")
}

// TestPendingJournal reads a journal without opening it: the blocks above
// the persisted state (none without a journal, fewer once a persist trims
// it), the file left as it was even with a torn tail, and a file that is
// not a journal refused with ErrCorruptJournal.
func TestPendingJournal(t *testing.T) {
	s := newJStore(t)
	db := s.open(t, trie.Options{})
	if b, err := db.PendingJournal(s.dir); err != nil || len(b) != 0 {
		t.Fatalf("no journal: %v, %v", b, err)
	}
	st := newBlockState()
	fr := db.Begin()
	jBlock(t, fr, st, 1, 0)
	trietest.Must(t, db.Persist(fr, 1), "Persist(1)")
	var at3 *trie.Frame
	for b := uint64(2); b <= 4; b++ {
		fr = fr.Begin()
		jBlock(t, fr, st, b, 0)
		trietest.Must(t, db.Journal(fr, b), "Journal(%d)", b)
		if b == 3 {
			at3 = fr
		}
	}
	if b, err := db.PendingJournal(s.dir); err != nil || len(b) != 3 || b[0] != 2 || b[2] != 4 {
		t.Fatalf("three journalled blocks: %v, %v", b, err)
	}
	trietest.Must(t, db.Persist(at3, 3), "Persist(3)")
	trietest.Must(t, db.Flush(), "Flush")
	if b, err := db.PendingJournal(s.dir); err != nil || len(b) != 1 || b[0] != 4 {
		t.Fatalf("after persisting block 3: %v, %v", b, err)
	}
	path := filepath.Join(s.dir, "hexstate-journal")
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	trietest.Must(t, err, "open")
	_, err = f.Write([]byte{0, 0, 1, 0, 9}) // a torn record
	trietest.Must(t, err, "write")
	trietest.Must(t, f.Close(), "close")
	before, _ := os.ReadFile(path)
	if b, err := db.PendingJournal(s.dir); err != nil || len(b) != 1 {
		t.Fatalf("with a torn tail: %v, %v", b, err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("PendingJournal changed the journal file")
	}
	trietest.Must(t, os.WriteFile(path, []byte("not a journal at all"), 0o644), "write")
	if _, err := db.PendingJournal(s.dir); !errors.Is(err, trie.ErrCorruptJournal) {
		t.Fatalf("a file that is not a journal: %v", err)
	}
}
