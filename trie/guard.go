package trie

import "fmt"

// This file is how a call takes a frame: the database's lock, then the frame's
// own use lock, which tells reads (shared) from writes (exclusive).
//
// A Frame may be read by several goroutines at once. A write needs the frame to
// itself: it takes the use lock with TryLock and, when any other call holds it
// (a write, a read or a hash), fails with ErrConcurrentWrite, changing
// nothing, instead of racing on the frame's vertex map. Reads and hashes never
// fail that way: a read waits for a write or a hash in progress, a hash (which
// memoizes keys in the frame, so it writes the frame too) waits for everything
// else. A sealed frame is never written, and is hashed under the database's
// exclusive lock as before, so its use lock is not needed.
//
// Locks are always taken in the order database, then frame, and no call holding
// the use lock waits for the database's lock, so the two cannot deadlock.

// useKind is how a call uses a frame.
type useKind uint8

const (
	useRead  useKind = iota // reads: shared with other reads
	useHash                 // computes and memoizes keys: waits for the frame to itself
	useWrite                // changes the frame: has it to itself or fails
)

// enter takes the locks for a call of kind k on fr and checks that fr can serve
// it (see Frame.check); op names the call in errors. On success the caller must
// call leave(k) when done; on failure nothing is held.
func (fr *Frame) enter(k useKind, op string) error {
	if fr == nil || fr.db == nil {
		return fmt.Errorf("trie: %s: %w", op, ErrNilFrame)
	}
	db := fr.db
	db.mu.RLock()
	switch k {
	case useRead:
		fr.use.RLock()
	case useHash:
		if fr.sealed { // set only under db.mu's write lock, and never cleared
			db.mu.RUnlock()
			db.mu.Lock()
		} else {
			fr.use.Lock()
		}
	case useWrite:
		if !fr.use.TryLock() {
			db.mu.RUnlock()
			return fmt.Errorf("trie: %s: %w", op, ErrConcurrentWrite)
		}
	}
	if err := fr.check(k == useWrite); err != nil {
		fr.release(k)
		return err
	}
	return nil
}

// leave ends a call enter(k) let in: after a write, builds with the
// `invariants` tag check the frame (see assertInvariants); then it releases
// what enter took, also when the check panics (so that the panic does not
// leave the database locked for the deferred Close of whoever recovers).
func (fr *Frame) leave(k useKind) {
	defer fr.release(k)
	if k == useWrite {
		fr.assertInvariants("after a write")
	}
}

// release releases what enter(k) took.
func (fr *Frame) release(k useKind) {
	db := fr.db
	switch k {
	case useRead:
		fr.use.RUnlock()
	case useHash:
		if fr.sealed { // enter took the database's write lock: sealed cannot have changed
			db.mu.Unlock()
			return
		}
		fr.use.Unlock()
	case useWrite:
		fr.use.Unlock()
	}
	db.mu.RUnlock()
}
