package trie_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hexstate/hexstate/internal/trietest"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// gatedBackend holds every Write until the test lets it through (gate), or
// fails it (fail).
type gatedBackend struct {
	trie.Backend
	mu      sync.Mutex
	gate    chan struct{} // nil: writes pass
	fail    error
	writes  int
	waiting chan struct{} // when set, told each time a write waits at the gate
}

var errWriteInjected = errors.New("injected write error")

func (g *gatedBackend) Write(b *vertex.Batch) error {
	g.mu.Lock()
	gate, fail, waiting := g.gate, g.fail, g.waiting
	g.mu.Unlock()
	if gate != nil {
		if waiting != nil {
			waiting <- struct{}{}
		}
		<-gate
	}
	if fail != nil {
		return fail
	}
	g.mu.Lock()
	g.writes++
	g.mu.Unlock()
	return g.Backend.Write(b)
}

func (g *gatedBackend) set(gate chan struct{}, fail error) {
	g.mu.Lock()
	g.gate, g.fail = gate, fail
	g.mu.Unlock()
}

// TestPersistInBackground holds the backend's write and checks that Persist
// returns, that frames on the new base read the persisted frames' state
// while the write is pending (from the encoded batch: the writer has encoded
// it and dropped the frames' vertex stores when the write reaches the gate), what Block, StateRoot and Written say, that the
// next Persist waits for the write, and that Flush returns once it landed.
func TestPersistInBackground(t *testing.T) {
	g := &gatedBackend{Backend: trie.NewMemoryBackend()}
	db, err := trie.Open(g, nil)
	trietest.Must(t, err, "Open")
	defer db.Close()
	st := newBlockState()
	fr := db.Begin()
	jBlock(t, fr, st, 1, 0)
	trietest.Must(t, db.Persist(fr, 1), "Persist(1)")
	trietest.Must(t, db.Flush(), "Flush")

	gate, waiting := make(chan struct{}), make(chan struct{}, 2)
	var opened sync.Once
	open := func() { opened.Do(func() { close(gate) }) }
	defer open() // a failing check must not leave Close waiting at the gate
	g.set(gate, nil)
	g.mu.Lock()
	g.waiting = waiting
	g.mu.Unlock()
	for b := uint64(2); b <= 4; b++ {
		fr = fr.Begin()
		jBlock(t, fr, st, b, 0)
	}
	root4 := trietest.FrameHash(t, fr)
	trietest.Must(t, db.Persist(fr, 4), "Persist(4) with the write held") // returns at once
	if db.Block() != 4 || trietest.DBRoot(t, db) != root4 {
		t.Fatalf("Block %d after Persist(4)", db.Block())
	}
	if b, _, pending := db.Written(); b != 1 || !pending {
		t.Fatalf("Written: block %d, pending %v; want 1, pending", b, pending)
	}
	<-waiting // encoded, at the gate
	// Blocks go on on top of the pending persist and read its vertices.
	f5 := fr.Begin()
	jBlock(t, f5, st, 5, 0)
	st.Check(t, f5, nil)
	persisted := make(chan error, 1)
	go func() { persisted <- db.Persist(f5, 5) }()
	select {
	case err := <-persisted:
		t.Fatalf("Persist(5) returned (%v) while the write of block 4 was held", err)
	case <-time.After(50 * time.Millisecond):
	}
	open() // both writes go through
	trietest.Must(t, <-persisted, "Persist(5)")
	trietest.Must(t, db.Flush(), "Flush")
	if b, r, pending := db.Written(); b != 5 || pending || r != trietest.DBRoot(t, db) {
		t.Fatalf("Written after Flush: block %d, pending %v", b, pending)
	}
	st.Check(t, db.Begin(), nil)
}

// TestPersistWriteFails fails the background write: the next call returns
// the error, nothing is lost, and a retry writes the batch.
func TestPersistWriteFails(t *testing.T) {
	mem := trie.NewMemoryBackend()
	g := &gatedBackend{Backend: mem}
	db, err := trie.Open(g, nil)
	trietest.Must(t, err, "Open")
	st := newBlockState()
	fr := db.Begin()
	root1 := jBlock(t, fr, st, 1, 0)
	g.set(nil, errWriteInjected)
	trietest.Must(t, db.Persist(fr, 1), "Persist(1): the failure is in the background")
	f2 := fr.Begin()
	jBlock(t, f2, st, 2, 0)
	if err := db.Persist(f2, 2); !errors.Is(err, errWriteInjected) {
		t.Fatalf("Persist after a failed write: %v, want the write's error", err)
	}
	st.Check(t, f2, nil) // the frames are intact; block 1 reads from the pending batch
	if b, _, pending := db.Written(); b != 0 || !pending {
		t.Fatalf("Written after the failure: %d, %v", b, pending)
	}
	if err := db.Flush(); !errors.Is(err, errWriteInjected) {
		t.Fatalf("Flush retrying while the backend still fails: %v", err)
	}
	g.set(nil, nil)
	trietest.Must(t, db.Persist(fr, 1), "retrying Persist(1)")
	trietest.Must(t, db.Persist(f2, 2), "Persist(2)")
	trietest.Must(t, db.Close(), "Close")
	db, err = trie.Open(mem, nil)
	trietest.Must(t, err, "reopen")
	defer db.Close()
	if db.Block() != 2 {
		t.Fatalf("reopened at block %d, want 2", db.Block())
	}
	st.Check(t, db.Begin(), nil)
	_ = root1
}

// TestCloseRetriesFailedWrite: Close writes a failed batch once more.
func TestCloseRetriesFailedWrite(t *testing.T) {
	mem := trie.NewMemoryBackend()
	g := &gatedBackend{Backend: mem}
	db, _ := trie.Open(g, nil)
	st := newBlockState()
	fr := db.Begin()
	root := jBlock(t, fr, st, 1, 0)
	gate := make(chan struct{})
	g.set(gate, errWriteInjected)
	trietest.Must(t, db.Persist(fr, 1), "Persist")
	g.mu.Lock()
	g.gate = nil
	g.mu.Unlock()
	close(gate)
	time.Sleep(10 * time.Millisecond)
	g.set(nil, nil)
	trietest.Must(t, db.Close(), "Close")
	db, _ = trie.Open(mem, nil)
	defer db.Close()
	if db.Block() != 1 || trietest.DBRoot(t, db) != root {
		t.Fatalf("after Close retried: block %d", db.Block())
	}
}

// TestSyncPersist: with SyncPersist the write has landed when Persist returns.
func TestSyncPersist(t *testing.T) {
	g := &gatedBackend{Backend: trie.NewMemoryBackend()}
	db, _ := trie.Open(g, &trie.Options{SyncPersist: true})
	defer db.Close()
	fr := db.Begin()
	jBlock(t, fr, newBlockState(), 1, 0)
	trietest.Must(t, db.Persist(fr, 1), "Persist")
	if b, _, pending := db.Written(); b != 1 || pending {
		t.Fatalf("Written after a SyncPersist: %d, %v", b, pending)
	}
	g.set(nil, errWriteInjected)
	f2 := fr.Begin()
	jBlock(t, f2, newBlockState(), 2, 0)
	if err := db.Persist(f2, 2); !errors.Is(err, errWriteInjected) {
		t.Fatalf("SyncPersist with a failing write: %v", err)
	}
	g.set(nil, nil)
}
