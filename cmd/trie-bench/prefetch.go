package main

import (
	"fmt"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie"
)

// prefetchMode (flag -prefetch) is how hexstate's sides hand a block's keys
// to trie.Frame.Prefetch before applying it: "off"; "sync", a call on the
// block's parent frame that returns before the block's first read; "async",
// the same call on another goroutine while the block executes, as a
// client's prefetcher runs beside its transactions (Apply waits for it
// before it returns).
var prefetchMode = "async"

// prefetcher is one block's prefetch.
type prefetcher struct {
	done chan error
}

// startPrefetch starts the prefetch of a block's keys on parent (sealed: the
// block's frame has begun on it) as prefetchMode says.
func startPrefetch(parent *trie.Frame, accounts []hashkey.Hash, slots []trie.StorageKey) *prefetcher {
	p := &prefetcher{done: make(chan error, 1)}
	switch prefetchMode {
	case "off":
		p.done <- nil
	case "sync":
		p.done <- parent.Prefetch(accounts, slots)
	default:
		go func() { p.done <- parent.Prefetch(accounts, slots) }()
	}
	return p
}

// wait returns the prefetch's error once it is done.
func (p *prefetcher) wait() error {
	if err := <-p.done; err != nil {
		return fmt.Errorf("prefetch: %w", err)
	}
	return nil
}

// checkPrefetchMode validates -prefetch.
func checkPrefetchMode(m string) error {
	switch m {
	case "off", "sync", "async":
		return nil
	}
	return fmt.Errorf("unknown -prefetch %q (want off, sync or async)", m)
}

// prefetchKeys returns the keys block b touches, as a client's prefetcher
// gets them.
func (h *hexSide) prefetchKeys(b *wlBlock) ([]hashkey.Hash, []trie.StorageKey) {
	accts := make([]hashkey.Hash, len(b.accOps))
	for i := range b.accOps {
		accts[i] = h.w.accounts[b.accOps[i].idx].hash
	}
	slots := make([]trie.StorageKey, len(b.slotOps))
	for i := range b.slotOps {
		slots[i] = trie.StorageKey{Account: h.w.accounts[b.slotOps[i].idx].hash, Slot: b.slotOps[i].slot}
	}
	return accts, slots
}

// prefetchKeys returns the keys block b reads and writes.
func (b *scaleBlock) prefetchKeys() ([]hashkey.Hash, []trie.StorageKey) {
	accts := make([]hashkey.Hash, 0, len(b.accReads)+len(b.accOps))
	for _, ops := range [][]scaleAccOp{b.accReads, b.accOps} {
		for i := range ops {
			accts = append(accts, ops[i].hash)
		}
	}
	slots := make([]trie.StorageKey, 0, len(b.slotRead)+len(b.slotOps))
	for _, ops := range [][]scaleSlotOp{b.slotRead, b.slotOps} {
		for i := range ops {
			slots = append(slots, trie.StorageKey{Account: ops[i].hash, Slot: ops[i].slot})
		}
	}
	return accts, slots
}
