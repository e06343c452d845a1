package main

import (
	"errors"
	"fmt"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie"
)

// prefetchMode (flag -prefetch) is how hexstate's sides hand a block's keys
// to trie.Frame.Prefetch and PrefetchReads before applying it: "off"; "sync",
// calls on the block's parent frame that return before the block's first
// read; "async", the same calls on other goroutines while the block
// executes, as a client's prefetcher runs beside its transactions (Apply
// waits for them before it returns); "auto" (the default), sync in the scale
// mode and off in the blocks mode, whose state is in the caches (there a
// prefetch only decodes every vertex of the paths a second time).
var prefetchMode = "auto"

// prefetcher is one block's prefetch.
type prefetcher struct {
	done chan error
}

// prefetchSet is what a block hands to the prefetch: the keys it writes
// (their paths: Frame.Prefetch) and those it only reads (their leaf-index
// entries: Frame.PrefetchReads).
type prefetchSet struct {
	accounts, readAccounts []hashkey.Hash
	slots, readSlots       []trie.StorageKey
}

// startPrefetch starts the prefetch of a block's keys on parent (sealed: the
// block's frame has begun on it) as prefetchMode says: the paths and the
// index entries side by side.
func startPrefetch(parent *trie.Frame, s *prefetchSet) *prefetcher {
	p := &prefetcher{done: make(chan error, 2)}
	run := func() {
		go func() { p.done <- parent.PrefetchReads(s.readAccounts, s.readSlots) }()
		p.done <- parent.Prefetch(s.accounts, s.slots)
	}
	switch prefetchMode {
	case "off":
		p.done <- nil
		p.done <- nil
	case "sync":
		run()
		err := errors.Join(<-p.done, <-p.done) // both done before the block starts
		p.done <- err
		p.done <- nil
	default:
		go run()
	}
	return p
}

// wait returns the prefetch's error once it is done.
func (p *prefetcher) wait() error {
	err := errors.Join(<-p.done, <-p.done)
	if err != nil {
		return fmt.Errorf("prefetch: %w", err)
	}
	return nil
}

// checkPrefetchMode validates -prefetch.
func checkPrefetchMode(m string) error {
	switch m {
	case "off", "sync", "async", "auto":
		return nil
	}
	return fmt.Errorf("unknown -prefetch %q (want off, sync, async or auto)", m)
}

// prefetchKeys returns the keys block b writes, as a client's prefetcher
// gets them.
func (h *hexSide) prefetchKeys(b *wlBlock) *prefetchSet {
	s := &prefetchSet{accounts: make([]hashkey.Hash, len(b.accOps)), slots: make([]trie.StorageKey, len(b.slotOps))}
	for i := range b.accOps {
		s.accounts[i] = h.w.accounts[b.accOps[i].idx].hash
	}
	for i := range b.slotOps {
		s.slots[i] = trie.StorageKey{Account: h.w.accounts[b.slotOps[i].idx].hash, Slot: b.slotOps[i].slot}
	}
	return s
}

// prefetchKeys returns the keys block b writes and those it only reads.
func (b *scaleBlock) prefetchKeys() *prefetchSet {
	s := &prefetchSet{}
	for i := range b.accOps {
		s.accounts = append(s.accounts, b.accOps[i].hash)
	}
	for i := range b.accReads {
		s.readAccounts = append(s.readAccounts, b.accReads[i].hash)
	}
	for i := range b.slotOps {
		s.slots = append(s.slots, trie.StorageKey{Account: b.slotOps[i].hash, Slot: b.slotOps[i].slot})
	}
	for i := range b.slotRead {
		s.readSlots = append(s.readSlots, trie.StorageKey{Account: b.slotRead[i].hash, Slot: b.slotRead[i].slot})
	}
	return s
}
