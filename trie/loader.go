package trie

import (
	"bytes"
	"errors"
	"fmt"

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
// loaderBatchRecords records: its memory does not depend on the state's size. Both use
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
	w     loadWriter // the database and the batches; Commit requires its base unchanged
	db    *DB
	alloc vertex.Allocator
	enc   nodeenc.Encoder
	accts *build.Builder // the account trie, rooted at vertex.RootID
	slots *build.Builder // one account's storage trie at a time
	nib   []byte         // scratch: a key's nibbles
	last  hashkey.Hash
	n     int   // accounts added
	err   error // the first failure; it ends the load
	done  bool  // committed or aborted
}

// loaderBatchRecords is how many records a StateLoader writes at a time.
const loaderBatchRecords = 1 << 16

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
	if err := db.loadStartLocked(); err != nil {
		return nil, err
	}
	if err := db.base.checkEmpty(); err != nil {
		return nil, err
	}
	l := &StateLoader{w: newLoadWriter(db, "state loader", true), db: db, alloc: db.base.alloc}
	l.w.leaves = true
	l.w.hold, l.w.cut = true, l.alloc.Top
	l.accts = build.New(db.format, &l.alloc, &l.enc, l.emitAccountTrie)
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
	if len(l.w.cur.batch.Puts) >= loaderBatchRecords {
		if err := l.w.writeBehind(); err != nil {
			return l.fail(err)
		}
	}
	return nil
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
	l.w.addLeaves(a)
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
	_, k, err := l.accts.Finish()
	if err == nil {
		err = l.w.wait()
	}
	if err != nil {
		return hashkey.Hash{}, l.fail(err)
	}
	root := k.Hash() // EmptyRoot for a void key: nothing was added
	if err := l.w.commit(l.alloc, block, root, nil); err != nil {
		l.err = err
		return hashkey.Hash{}, err
	}
	return root, nil
}

// loadStartLocked returns why a load that writes the backend itself (a
// StateLoader, a copy) cannot start: the database is closed, or another load
// is running. The caller holds db.mu.
func (db *DB) loadStartLocked() error {
	if db.closed {
		return ErrClosed
	}
	if db.loading {
		return fmt.Errorf("%w: another state load is running", ErrBulkLoad)
	}
	return nil
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
		l.w.wait() // the write in flight, if any: its records stay unreferenced
		l.end()
	}
}

// end marks the load over and lets another one start.
func (l *StateLoader) end() {
	l.done = true
	l.w.release()
}

// fail records err as the load's end.
func (l *StateLoader) fail(err error) error {
	l.err = err
	l.w.wait()
	l.w.release()
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

// emit encodes a finished vertex into the batch being filled.
func (l *StateLoader) emit(id vertex.ID, v *vertex.Vertex) error {
	l.w.putVertex(id, v)
	return nil
}

// emitAccountTrie is emit for the account trie's vertices: its branches,
// on every account's path, are what the load keeps warming the vertex cache
// with once the cache is full (loadWriter.warm).
func (l *StateLoader) emitAccountTrie(id vertex.ID, v *vertex.Vertex) error {
	l.w.putVertex(id, v)
	if v.Kind == vertex.Branch {
		l.w.keepWarm(id)
	}
	return nil
}
