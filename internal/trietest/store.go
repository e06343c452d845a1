package trietest

import (
	"fmt"
	"testing"

	"github.com/hexstate/hexstate/internal/triehook"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// Formats are the vertex formats every store test runs in.
var Formats = []vertex.Format{vertex.FormatV1, vertex.FormatV2}

// Opener names a kind of backend and opens it.
type Opener struct {
	Name string
	// Open opens the backend stored in dir, creating it when dir is empty;
	// opening dir again after Close must find what was written. Nil means the
	// memory backend (see Memory).
	Open func(tb testing.TB, dir string) trie.Backend
}

// Memory is the in-memory backend. A Store keeps one memory backend for its
// lifetime and returns it from every open: its Close keeps the records, so a
// reopen behaves like a restart.
var Memory = Opener{Name: "memory"}

// Store is one store that a test opens, closes and reopens.
type Store struct {
	Name    string
	Dir     string         // the directory of a persistent backend
	Records vertex.Records // open DBs with this Options.Records (0: the default)

	tb  testing.TB
	op  Opener
	mem trie.Backend
}

// NewStore returns a new, empty store of kind o; its directory is a TempDir of tb.
func NewStore(tb testing.TB, o Opener) *Store {
	s := &Store{Name: o.Name, tb: tb, op: o}
	if o.Open == nil {
		s.mem = trie.NewMemoryBackend()
	} else {
		s.Dir = tb.TempDir()
	}
	return s
}

// Backend opens the store's backend; the caller closes it (directly or
// through a DB).
func (s *Store) Backend() trie.Backend {
	s.tb.Helper()
	if s.mem != nil {
		return s.mem
	}
	return s.op.Open(s.tb, s.Dir)
}

// Open opens a DB of format f on the store; Cleanup closes it.
func (s *Store) Open(f vertex.Format) *trie.DB {
	s.tb.Helper()
	return s.OpenWith(trie.Options{Format: f})
}

// OpenWith opens a DB with options o (the store's Records when o has none);
// Cleanup closes it (DB.Close is idempotent).
func (s *Store) OpenWith(o trie.Options) *trie.DB {
	s.tb.Helper()
	b := s.Backend()
	if o.Records == 0 {
		o.Records = s.Records
	}
	db, err := trie.Open(b, &o)
	if err != nil {
		b.Close()
		s.tb.Fatalf("trie.Open(%s, %v): %v", s.Name, o.Format, err)
	}
	s.tb.Cleanup(func() { db.Close() })
	return db
}

// Reopen closes db and opens the store again in format f, as a restarted
// client would.
func (s *Store) Reopen(db *trie.DB, f vertex.Format) *trie.DB {
	s.tb.Helper()
	if err := db.Close(); err != nil {
		s.tb.Fatalf("%s: Close: %v", s.Name, err)
	}
	return s.Open(f)
}

// Raw runs fn on the backend alone (no DB), then closes it.
func (s *Store) Raw(fn func(b trie.Backend)) {
	s.tb.Helper()
	b := s.Backend()
	defer func() {
		if err := b.Close(); err != nil {
			s.tb.Errorf("closing the backend: %v", err)
		}
	}()
	fn(b)
}

// Each runs fn as subtest "kind/format" on a new store for every kind of
// stores and every format.
func Each(t *testing.T, stores []Opener, fn func(t *testing.T, s *Store, f vertex.Format)) {
	t.Helper()
	if len(stores) == 0 {
		t.Fatal("trietest.Each: no stores")
	}
	for _, o := range stores {
		for _, f := range Formats {
			t.Run(o.Name+"/"+f.String(), func(t *testing.T) { fn(t, NewStore(t, o), f) })
		}
	}
}

// EachFormat runs fn as a subtest for every format.
func EachFormat(t *testing.T, fn func(t *testing.T, f vertex.Format)) {
	for _, f := range Formats {
		t.Run(f.String(), func(t *testing.T) { fn(t, f) })
	}
}

// Must fails t when err is not nil.
func Must(t testing.TB, err error, what string, args ...any) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", fmt.Sprintf(what, args...), err)
	}
}

// Generic is a frame's generic byte-keyed API (Put, Get, Delete, Hash, Prove,
// Iterator, BulkLoad), which package trie exports only on the in-memory Trie.
type Generic struct{ triehook.API }

// G returns fr's generic API.
func G(fr *trie.Frame) Generic { return Generic{triehook.Generic(fr)} }

// Iterator returns an iterator over fr's keys from start.
func (g Generic) Iterator(start []byte) *trie.Iterator {
	return g.API.Iterator(start).(*trie.Iterator)
}

// RecordsOf is the record variant without children's keys (vertex.KeysOnce)
// when noChild, else vertex.ChildKeyCopies: for tests that run both.
func RecordsOf(noChild bool) vertex.Records {
	if noChild {
		return vertex.KeysOnce
	}
	return vertex.ChildKeyCopies
}
