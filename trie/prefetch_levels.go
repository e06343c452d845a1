package trie

import (
	"fmt"
	"runtime"

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
// It is a read of fr, like Prefetch, made a few hundred branches at a time
// (upperLevelsPart), so that a Persist or a hash waits for one part, not for
// the whole: call it on the persisted frame (DB.Begin) once after Open, before
// the first block or from another goroutine beside the blocks. A branch the
// cache could not keep is not followed: the levels below it are left to the
// blocks.
func (fr *Frame) PrefetchUpperLevels() error {
	level := []branchAt{{id: vertex.RootID}}
	err := fr.prefetchRoot()
	for err == nil && len(level) > 0 {
		var next []branchAt
		for len(level) > 0 && err == nil {
			part := level[:min(len(level), upperLevelsPart)]
			level = level[len(part):]
			next, err = fr.prefetchLevelPart(part, next)
		}
		level = next
	}
	return err
}

// upperLevelsPart is how many branches PrefetchUpperLevels lists the children
// of under one read of the frame: their reads take a fraction of a second
// from a disk.
const upperLevelsPart = 512

// branchAt is a vertex of the account trie that PrefetchUpperLevels reached,
// with the nibbles above it.
type branchAt struct {
	id    vertex.ID
	depth int
}

// prefetchRoot reads the root (pinned) when only the backend holds it.
func (fr *Frame) prefetchRoot() error {
	if err := fr.enter(useRead, "prefetch upper levels"); err != nil {
		return err
	}
	defer fr.leave(useRead)
	if !fr.stored(vertex.RootID) {
		return nil
	}
	if err := fr.db.readParallel([]readTask{{first: vertex.RootID, pin: true}}, 1); err != nil {
		return fmt.Errorf("trie: prefetch upper levels: %w", err)
	}
	return nil
}

// prefetchLevelPart appends to next the children of the branches of part
// that are at most pinDepth nibbles below the root, and reads (pinned) those
// of them that only the backend holds, under one read of fr.
func (fr *Frame) prefetchLevelPart(part, next []branchAt) ([]branchAt, error) {
	if err := fr.enter(useRead, "prefetch upper levels"); err != nil {
		return next, err
	}
	defer fr.leave(useRead)
	var reads []readTask
	for _, b := range part {
		v, ok, err := fr.getWarm(b.id)
		if err != nil {
			return next, fmt.Errorf("trie: prefetch upper levels: %w", err)
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
			if depth < pinDepth { // else its children are below the pinned levels
				next = append(next, branchAt{id: c, depth: depth})
			}
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
	if err := fr.db.readParallel(reads, runtime.GOMAXPROCS(0)); err != nil {
		return next, fmt.Errorf("trie: prefetch upper levels: %w", err)
	}
	return next, nil
}
