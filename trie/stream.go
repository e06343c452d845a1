package trie

import (
	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/vertex"
)

// streamBuilder builds one trie from leaves whose keys all have the same
// length, given one at a time in strictly increasing order, the way
// go-ethereum's StackTrie does: it keeps only the branches open on the path of
// the last key, and hands every vertex to emit as soon as it is complete —
// placed, hashed and with its ID — so its memory does not grow with the trie.
//
// When a new key diverges from the last one at nibble d, every open branch
// deeper than d is complete: each is closed (hashed, given its ID and emitted)
// from the bottom up, and the sub-trie that remains becomes a child of the
// open branch at depth d, which is opened there and then if there is none. A
// vertex learns its ID and its path only when it is placed into its parent:
// its ID is the parent's base plus the nibble in format v2 (the base is taken
// when the branch opens), a fresh ID in v1; its path runs from below the
// parent's nibble to its own branching depth (a leaf: to the key's end).
//
// emit must be done with the vertex when it returns: the builder reuses
// vertices, paths and child arrays.
type streamBuilder struct {
	format vertex.Format
	alloc  *vertex.Allocator
	h      *hasher
	emit   func(id vertex.ID, v *vertex.Vertex) error
	rootID vertex.ID

	stack []*openBranch // open branches, shallowest first
	free  []*openBranch // closed and emitted: reused by push
	last  []byte        // nibbles of the last key added
	ck    []byte        // scratch: a placed branch's packed children's keys
	pend  pendingTrie   // the sub-trie of the last key, not placed yet
	has   bool          // a key was added
}

type openBranch struct {
	depth int // the nibble it branches on
	v     vertex.Vertex
	kids  [16]hashkey.Key
	ids   [16]vertex.ID // format v1: the child IDs
}

// pendingTrie is the sub-trie of the last key that is not placed yet: its
// leaf, or (branch not nil) a closed branch.
type pendingTrie struct {
	leaf    vertex.Vertex
	account vertex.Account
	root    hashkey.Hash // an account's storage root
	branch  *openBranch
}

func newStreamBuilder(f vertex.Format, a *vertex.Allocator, h *hasher, rootID vertex.ID, emit func(vertex.ID, *vertex.Vertex) error) *streamBuilder {
	return &streamBuilder{format: f, alloc: a, h: h, emit: emit, rootID: rootID}
}

// add adds the leaf of key (nibbles, above the last key's, of the same length)
// with payload kind and value or account acc (whose storage trie, if any, is
// built and has root root). key and value are copied.
func (b *streamBuilder) add(key []byte, kind vertex.PayloadKind, value []byte, acc *vertex.Account, root hashkey.Hash) error {
	if b.has {
		d := commonPrefix(b.last, key)
		if err := b.closeBelow(d); err != nil {
			return err
		}
		if len(b.stack) == 0 || b.stack[len(b.stack)-1].depth < d {
			b.push(d)
		}
		if err := b.placePending(b.stack[len(b.stack)-1]); err != nil {
			return err
		}
	}
	b.has = true
	b.last = append(b.last[:0], key...)
	p := &b.pend
	p.leaf = vertex.Vertex{Kind: vertex.Leaf, Payload: kind, Value: append(p.leaf.Value[:0], value...)}
	if acc != nil {
		p.account, p.root = *acc, root
		p.leaf.Acc = &p.account
	}
	return nil
}

// finish closes every open branch, places what remains at the root ID and
// returns the root's key (void for an empty trie).
func (b *streamBuilder) finish() (hashkey.Key, error) {
	if !b.has {
		return hashkey.Key{}, nil
	}
	if err := b.closeBelow(-1); err != nil {
		return hashkey.Key{}, err
	}
	return b.place(b.rootID, 0)
}

// closeBelow closes the open branches deeper than d, bottom up: each takes the
// pending sub-trie as its last child and becomes the pending sub-trie itself.
func (b *streamBuilder) closeBelow(d int) error {
	for len(b.stack) > 0 && b.stack[len(b.stack)-1].depth > d {
		top := b.stack[len(b.stack)-1]
		if err := b.placePending(top); err != nil {
			return err
		}
		b.stack = b.stack[:len(b.stack)-1]
		b.pend.branch = top
	}
	return nil
}

// push opens a branch at depth d (its v2 slots are taken now).
func (b *streamBuilder) push(d int) {
	var ob *openBranch
	if n := len(b.free); n > 0 {
		ob, b.free = b.free[n-1], b.free[:n-1]
	} else {
		ob = new(openBranch)
	}
	ob.depth, ob.kids, ob.ids = d, [16]hashkey.Key{}, [16]vertex.ID{}
	ob.v = vertex.Vertex{}
	initBranch(&ob.v, nil, b.format, b.alloc, &ob.ids)
	b.stack = append(b.stack, ob)
}

// placePending makes the pending sub-trie the child of open branch p at the
// last key's nibble p.depth.
func (b *streamBuilder) placePending(p *openBranch) error {
	n := b.last[p.depth]
	k, err := b.place(addChild(&p.v, n, b.alloc), p.depth+1)
	p.kids[n] = k
	return err
}

// place gives the pending sub-trie ID id and its path from nibble start of the
// last key, hashes it and emits it. A placed branch is free for reuse.
func (b *streamBuilder) place(id vertex.ID, start int) (hashkey.Key, error) {
	var v *vertex.Vertex
	if ob := b.pend.branch; ob != nil {
		v = &ob.v
		v.Path = b.last[start:ob.depth]
		inner, outer, err := b.h.encodeBranch(v, &ob.kids)
		if err != nil {
			return hashkey.Key{}, err
		}
		v.Key = b.h.nodeKey(inner, outer)
		// The record carries the children's keys, as a persisted branch's does:
		// the first update below it then reads no siblings.
		b.ck = vertex.PackChildKeys(b.ck[:0], v.Used, &ob.kids)
		v.ChildKeys = b.ck
		b.pend.branch = nil
		b.free = append(b.free, ob) // emitted below; not touched before the next push
	} else {
		v = &b.pend.leaf
		v.Path = b.last[start:]
		v.Key = b.h.leafKey(v, &b.pend.root)
	}
	k := v.Key
	if err := b.emit(id, v); err != nil {
		return hashkey.Key{}, err
	}
	return k, nil
}

// reset readies the builder, after finish, for a new trie rooted at rootID.
func (b *streamBuilder) reset(rootID vertex.ID) {
	b.rootID, b.has, b.stack = rootID, false, b.stack[:0]
}
