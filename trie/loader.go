package trie

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie/internal/build"
	"github.com/hexstate/hexstate/trie/internal/nodeenc"
	"github.com/hexstate/hexstate/vertex"
)

// StateLoader writes a whole state into an empty database the way snap sync
// delivers it: accounts in strictly increasing AddrHash order, over as many Add
// calls as the caller likes, each account with its storage sorted by slot hash.
// Unlike BulkLoadAccounts, which builds the state in a frame and so holds all of
// it in memory, a loader keeps only the branches open on the current path (see
// build.Builder) and writes finished vertices to the backend in batches of
// loaderBatch records: its memory does not depend on the state's size. Both use
// the same builder: a load writes the records (IDs included) that
// BulkLoadAccounts of the same accounts followed by Persist writes.
//
// Nothing is visible until Commit, which writes the last batch together with
// the admin record (root, block, allocator top) — the one atomic step that
// makes the loaded state the database's persisted state. A load that fails or
// is abandoned (Abort, a crash) leaves the database at its empty state; the
// records it wrote lie above the allocator's top, where nothing refers to them
// (a later write overwrites them or leaves them unreachable).
//
// A loader is used by one goroutine and ends with Commit or Abort (until then
// no other load can start; a failed Add ends it by itself). Frames begun on the
// database before Commit answer ErrStale after it, as after a Persist; a
// Persist during the load makes the load fail with ErrStale.
type StateLoader struct {
	db       *DB
	base     *Frame // the base the load started on; Commit requires it unchanged
	alloc    vertex.Allocator
	enc      nodeenc.Encoder
	accts    *build.Builder // the account trie, rooted at vertex.RootID
	slots    *build.Builder // one account's storage trie at a time
	cur      *loaderBatch   // the batch being filled
	spare    *loaderBatch   // the other one: in flight while inflight is not nil
	inflight chan error     // the result of the write in flight, nil when none
	nib      []byte         // scratch: a key's nibbles
	last     hashkey.Hash
	n        int   // accounts added
	err      error // the first failure; it ends the load
	done     bool  // committed or aborted
	// released is set once the database's loading flag is cleared.
	released bool
}

// loaderBatchRecords is how many records a StateLoader writes at a time.
const loaderBatchRecords = 1 << 16

// loaderBatch is a batch of records and the buffer they are encoded in. A
// loader has two: it fills one while the other is being written.
type loaderBatch struct {
	batch vertex.Batch
	buf   []byte
}

// ErrLoaderDone is returned by a StateLoader used after Commit or Abort.
var ErrLoaderDone = errors.New("trie: state loader already committed or aborted")

// NewStateLoader starts a load into db, whose persisted state must be empty
// and which must have no other load running (else the error wraps
// ErrBulkLoad).
func (db *DB) NewStateLoader() (*StateLoader, error) {
	if err := db.Flush(); err != nil { // the loader writes the backend itself
		return nil, err
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return nil, ErrClosed
	}
	if db.loading {
		return nil, fmt.Errorf("%w: another state load is running", ErrBulkLoad)
	}
	if err := db.base.checkEmpty(); err != nil {
		return nil, err
	}
	db.loading = true
	l := &StateLoader{db: db, base: db.base, alloc: db.base.alloc, cur: new(loaderBatch), spare: new(loaderBatch)}
	l.accts = build.New(db.format, &l.alloc, &l.enc, l.emit)
	l.accts.Reset(vertex.RootID, 0)
	l.slots = build.New(db.format, &l.alloc, &l.enc, l.emit)
	return l, nil
}

// Add adds accounts, sorted by AddrHash and above every account added before,
// each with its storage sorted by slot hash and without zero values. An input
// error wraps ErrBulkLoad; any error ends the load (Commit then fails too).
func (l *StateLoader) Add(accounts []AccountLeaf) error {
	if err := l.usable(); err != nil {
		return err
	}
	for i := range accounts {
		if err := l.add(&accounts[i]); err != nil {
			return l.fail(err)
		}
	}
	if len(l.cur.batch.Puts) >= loaderBatchRecords {
		if err := l.writeBehind(); err != nil {
			return l.fail(err)
		}
	}
	return nil
}

// writeBehind hands the full batch to a goroutine that writes it while the
// loader goes on filling the other one (after the write before it is done).
// Hashing and RocksDB's inserts then run side by side, on two cores.
func (l *StateLoader) writeBehind() error {
	if err := l.wait(); err != nil {
		return err
	}
	b := l.cur
	l.cur, l.spare = l.spare, b
	done := make(chan error, 1)
	l.inflight = done
	go func() {
		l.db.mu.Lock()
		defer l.db.mu.Unlock()
		done <- l.writeLocked(b, nil)
	}()
	return nil
}

// wait returns the result of the write in flight, if any, once it is done.
func (l *StateLoader) wait() error {
	if l.inflight == nil {
		return nil
	}
	err := <-l.inflight
	l.inflight = nil
	return err
}

func (l *StateLoader) add(a *AccountLeaf) error {
	if l.n > 0 && bytes.Compare(l.last[:], a.AddrHash[:]) >= 0 {
		return fmt.Errorf("%w: account %d (%v) is not above the one before", ErrBulkLoad, l.n, a.AddrHash)
	}
	if err := checkStorage(a); err != nil {
		return err
	}
	if err := addAccount(l.accts, l.slots, a, &l.nib); err != nil {
		return err
	}
	l.last = a.AddrHash
	l.n++
	return nil
}

// Commit finishes the account trie and writes what is left with the admin
// record for block: the loaded state becomes the database's persisted state
// (its base) and its root is returned. block follows Persist's rule (above the
// persisted block, or 0 on a database at block 0); a block that breaks it is
// refused with an error wrapping ErrBlockOrder before anything is written,
// and the load goes on.
func (l *StateLoader) Commit(block uint64) (hashkey.Hash, error) {
	if err := l.usable(); err != nil {
		return hashkey.Hash{}, err
	}
	l.db.mu.RLock()
	err := l.db.checkBlockOrder(block)
	l.db.mu.RUnlock()
	if err != nil { // the load goes on: Commit again with a valid block, or Abort
		return hashkey.Hash{}, fmt.Errorf("trie: state loader: commit block %d: %w", block, err)
	}
	defer l.end()
	k, err := l.accts.Finish()
	if err == nil {
		err = l.wait()
	}
	if err != nil {
		return hashkey.Hash{}, l.fail(err)
	}
	root := k.Hash() // EmptyRoot for a void key: nothing was added
	db := l.db
	a := admin{format: db.format, top: l.alloc.Top, block: block, root: root}
	db.mu.Lock()
	defer db.mu.Unlock()
	if err := l.writeLocked(l.cur, a.encode()); err != nil {
		l.err = err
		return hashkey.Hash{}, err
	}
	db.adoptLoadedLocked(l.alloc, block, root)
	return root, nil
}

// adoptLoadedLocked makes a state that a load wrote straight to the backend
// (its last batch carried the admin record of block and root, allocator top
// alloc.Top) the database's persisted state. As after a Persist, frames on
// the old base are stale; the loaded state is read through the cache from the
// backend. The caller holds db.mu.
func (db *DB) adoptLoadedLocked(alloc vertex.Allocator, block uint64, root hashkey.Hash) {
	db.base.state = folded
	db.base = newFrame(db, nil, alloc)
	db.base.sealed = true
	db.block, db.root = block, root
	db.stored = stored{block: block, root: root}
}

// Abort ends the load without committing it. The database keeps its state.
// Calling it after Commit or again does nothing.
func (l *StateLoader) Abort() {
	if !l.done {
		l.wait() // the write in flight, if any: its records stay unreferenced
		l.end()
	}
}

// end marks the load over and lets another one start.
func (l *StateLoader) end() {
	l.done = true
	l.release()
}

// release lets another load start (once).
func (l *StateLoader) release() {
	if l.released {
		return
	}
	l.released = true
	l.db.mu.Lock()
	l.db.loading = false
	l.db.mu.Unlock()
}

// fail records err as the load's end.
func (l *StateLoader) fail(err error) error {
	l.err = err
	l.wait()
	l.release()
	return err
}

func (l *StateLoader) usable() error {
	switch {
	case l.done:
		return ErrLoaderDone
	case l.err != nil:
		return l.err
	}
	return nil
}

// emit encodes a finished vertex into the batch being filled, without its
// children's keys when the database stores none (Options.NoChildKeys), as
// Persist does.
func (l *StateLoader) emit(id vertex.ID, v *vertex.Vertex) error {
	if l.db.noChild && v.ChildKeys != nil {
		cp := *v
		cp.ChildKeys = nil
		v = &cp
	}
	b := l.cur
	start := len(b.buf)
	b.buf = vertex.Encode(b.buf, v)
	b.batch.Puts = append(b.batch.Puts, vertex.Record{ID: id, Rec: b.buf[start:len(b.buf):len(b.buf)]})
	return nil
}

// writeLocked writes b (with admin, when not nil) and empties it; the caller
// holds the database's lock.
func (l *StateLoader) writeLocked(b *loaderBatch, admin []byte) error {
	if l.db.closed {
		return ErrClosed
	}
	if l.db.base != l.base {
		return ErrStale // a Persist moved the base: the IDs taken here may be in use
	}
	// In ID order, as a persist writes them (RocksDB inserts sorted keys faster).
	puts := b.batch.Puts
	slices.SortFunc(puts, func(x, y vertex.Record) int { return cmp.Compare(x.ID, y.ID) })
	b.batch.Admin = admin
	l.db.wmu.Lock()
	err := l.db.backend.Write(&b.batch)
	l.db.wmu.Unlock()
	if err != nil {
		return fmt.Errorf("trie: state loader: writing %d records: %w", len(puts), err)
	}
	// Warm the vertex cache as a persist does. Until Commit these records lie
	// above the allocator's top and nothing refers to them; if the load never
	// commits they stay unreferenced in the cache as in the store, and any
	// frame that later takes one of their IDs writes (and re-caches) it before
	// anything can read it.
	for _, r := range puts {
		l.db.cache.Put(r.ID, r.Rec)
	}
	b.batch = vertex.Batch{Puts: puts[:0]}
	b.buf = b.buf[:0]
	return nil
}
