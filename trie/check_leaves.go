package trie

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/hexstate/hexstate/vertex"
)

// The leaf index's part of DB.Check: every account and slot of the persisted
// state has its entry with its value, and the index holds nothing else (the
// marker aside).

// leafPair is one index entry, copied off the backend's iterator.
type leafPair struct{ key, val []byte }

// checkLeafIndex compares the leaf index with the persisted state's leaves,
// both in key order (the trie's walked on workers goroutines), adding up to
// max violations to rep. The caller holds db.mu.
func (db *DB) checkLeafIndex(ctx context.Context, rep *CheckReport, workers, max int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	index := make(chan leafPair, 256)
	scanErr := make(chan error, 1)
	go func() {
		defer close(index)
		arena := kvArena{chunk: 256 << 10} // never reset: the pairs outlive their sends
		scanErr <- db.backend.EachLeaf(nil, func(key, val []byte) error {
			if bytes.Equal(key, leafMarkerKey) {
				return nil
			}
			k, v := arena.add(key, val)
			select {
			case index <- leafPair{k, v}:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	found := 0
	report := func(key []byte, reason string) error {
		found++
		rep.addViolation(vertex.NoID, func() string { return fmt.Sprintf("leaf index entry %x", key) }, reason)
		if found >= max {
			return errStopWalk
		}
		return nil
	}
	next, more := <-index
	err := db.eachLeafEntry(ctx, workers, func(key, val []byte) error {
		// Index entries below key have no leaf.
		for more && bytes.Compare(next.key, key) < 0 {
			rep.LeafEntries++
			if err := report(next.key, "no such account or slot in the trie"); err != nil {
				return err
			}
			next, more = <-index
		}
		if !more || !bytes.Equal(next.key, key) {
			return report(key, "missing: the trie has this leaf")
		}
		rep.LeafEntries++
		if !bytes.Equal(next.val, val) {
			if err := report(key, fmt.Sprintf("value %x, the trie's leaf has %x", next.val, val)); err != nil {
				return err
			}
		}
		next, more = <-index
		return nil
	})
	for err == nil && more {
		rep.LeafEntries++
		err = report(next.key, "no such account or slot in the trie")
		next, more = <-index
	}
	cancel()
	for range index {
	}
	if serr := <-scanErr; err == nil && serr != nil && !errors.Is(serr, context.Canceled) {
		err = serr
	}
	if err == errStopWalk {
		rep.Stopped = true
		err = nil
	}
	if err != nil {
		return fmt.Errorf("trie: check: leaf index: %w", err)
	}
	return nil
}
