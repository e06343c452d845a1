package trie

import (
	"fmt"

	"github.com/hexstate/hexstate/vertex"
)

// PrefetchUpperLevels reads into the vertex cache, pinned, the account trie's
// branches at most pinDepth nibbles below the root that only the backend
// holds: the branches every block's account paths run through, which Prefetch
// pins as it meets them (docs/design.md §7, "Pinned upper levels"). After Open
// the cache is empty, and the first blocks would read these branches on their
// paths, a few at a time, each block slower than the steady state until they
// are all in; this reads them level by level, each level's reads side by side
// (v2: a group read per branch, of its stored used slots), before the blocks
// need them. At 10M accounts that is ~1.1M branches, ~60 MB of records,
// whatever the state's size beyond that.
//
// It is a read, like Prefetch: call it on the persisted frame (DB.Begin) once
// after Open, before the first block or from another goroutine beside it. A
// branch the cache could not keep is not followed: the levels below it are
// left to the blocks.
func (fr *Frame) PrefetchUpperLevels() error {
	if err := fr.enter(useRead, "prefetch upper levels"); err != nil {
		return err
	}
	defer fr.leave(useRead)
	type branchAt struct {
		id    vertex.ID
		depth int // nibbles above it
	}
	level := []branchAt{{id: vertex.RootID}}
	var reads []readTask
	if fr.stored(vertex.RootID) {
		reads = append(reads, readTask{first: vertex.RootID, pin: true})
	}
	for len(level) > 0 {
		if err := fr.db.readParallel(reads, prefetchWorkers/prefetchReaders); err != nil {
			return fmt.Errorf("trie: prefetch upper levels: %w", err)
		}
		reads = reads[:0]
		var next []branchAt
		for _, b := range level {
			v, ok, err := fr.getWarm(b.id)
			if err != nil {
				return fmt.Errorf("trie: prefetch upper levels: %w", err)
			}
			if !ok || v == nil || v.Kind != vertex.Branch {
				continue // not kept by the cache, absent, or a leaf
			}
			depth := b.depth + len(v.Path) + 1 // of its children
			if depth > pinDepth {
				continue
			}
			for n := 0; n < vertex.BranchSlots; n++ {
				c := v.Child(n)
				if c == vertex.NoID {
					continue
				}
				next = append(next, branchAt{id: c, depth: depth})
				if v.Kids != nil && fr.stored(c) {
					reads = append(reads, readTask{first: c, pin: true})
				}
			}
			if v.Kids == nil {
				if slots := fr.storedSlots(v.Base, v.Used); slots != 0 {
					reads = append(reads, readTask{first: v.Base, used: slots, pin: true})
				}
			}
		}
		level = next
	}
	return nil
}
