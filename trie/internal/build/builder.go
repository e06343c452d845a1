package build

import (
	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie/internal/nodeenc"
	"github.com/hexstate/hexstate/vertex"
)

// Builder is the one builder of every sorted-input path (the trie package's
// BulkLoadAccounts, StateLoader and generic bulk load): it builds one trie, or one sub-trie,
// from leaves given one at a time in strictly increasing key order, the way
// go-ethereum's StackTrie does. It keeps only the branches open on the path of
// the last key and hands every vertex to emit as soon as it is complete —
// placed, hashed, with its ID and (a branch) its children's keys — so its
// memory does not grow with the trie, and its output can go anywhere: a frame,
// batches of records, sorted files.
//
// When a new key diverges from the last one at nibble d, every open branch
// deeper than d is complete: each is closed (hashed, given its ID and emitted)
// from the bottom up, and the sub-trie that remains becomes a child of the
// open branch at depth d, which is opened there and then if there is none. A
// last key that is a prefix of the new one (d is its length) becomes instead
// the value of the branch at d.
//
// IDs are taken from alloc in the order the vertices are finished, which the
// parallel bulk load (the trie package's bulkdriver.go) reproduces: a
// format-v2 branch takes its 16 slots when it closes, after its children's
// sub-tries, and only then are its children emitted (it holds them until
// then); a format-v1 vertex takes its ID when it is placed into its parent,
// after its own sub-trie's; an account's storage trie takes its IDs after
// the account's key is added (closing what the key ends) and before the next
// key. Every vertex is therefore emitted with an ID above every ID emitted
// before it, but for the top vertex: it is placed at rootID, or, when rootID
// is NoID (a storage trie), at an ID taken when the build finishes. Its path
// starts at nibble start of its key (start > 0 for a sub-trie whose parent
// the caller builds). Emitted in increasing ID order, a load's batches each
// lie above the ones before it, and their files go to the bottom level of
// the LSM as they are (docs/design.md §8).
//
// Every open branch and the pending sub-trie are plain values (depths, keys,
// IDs), so the whole state of a build is small and could be saved with the
// allocator's top and restored to resume it.
//
// emit must be done with the vertex when it returns: the builder reuses
// vertices, paths, values, child arrays and the children's-keys buffer.
type Builder struct {
	format vertex.Format
	alloc  *vertex.Allocator
	enc    *nodeenc.Encoder
	emit   func(id vertex.ID, v *vertex.Vertex) error
	rootID vertex.ID
	start  int // nibble where the top vertex's path starts

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
	value []byte        // backing store of v.Value
	// held are a format-v2 branch's children placed so far (v.Used), kept
	// until the branch closes and takes their IDs.
	held [16]heldVertex
}

// heldVertex is a finished vertex copied out of the builder's scratch to
// wait for its ID.
type heldVertex struct {
	v   vertex.Vertex
	acc vertex.Account
	buf []byte // backing store of v's path, value and children's keys
}

// set makes h a copy of v.
func (h *heldVertex) set(v *vertex.Vertex) {
	h.buf = append(append(append(h.buf[:0], v.Path...), v.Value...), v.ChildKeys...)
	h.v = *v
	p, q := len(v.Path), len(v.Path)+len(v.Value)
	h.v.Path = h.buf[:p:p]
	if v.Value != nil {
		h.v.Value = h.buf[p:q:q]
	}
	if v.ChildKeys != nil {
		h.v.ChildKeys = vertex.ChildKeys(h.buf[q:len(h.buf):len(h.buf)])
	}
	if v.Acc != nil {
		h.acc = *v.Acc
		h.v.Acc = &h.acc
	}
}

// pendingTrie is the sub-trie of the last key that is not placed yet: its
// leaf, or (branch not nil) a closed branch.
type pendingTrie struct {
	leaf    vertex.Vertex
	account vertex.Account
	root    hashkey.Hash // an account's storage root
	branch  *openBranch
}

// New returns a builder of format f that takes IDs from a, hashes with enc and
// hands every finished vertex to emit. Builders that share a may not run
// concurrently.
func New(f vertex.Format, a *vertex.Allocator, enc *nodeenc.Encoder, emit func(vertex.ID, *vertex.Vertex) error) *Builder {
	return &Builder{format: f, alloc: a, enc: enc, emit: emit}
}

// Reset readies the builder for a new trie whose top vertex goes to rootID
// (NoID: to an ID taken when the build finishes) with its path from nibble
// start of its keys.
func (b *Builder) Reset(rootID vertex.ID, start int) {
	b.rootID, b.start, b.has, b.stack = rootID, start, false, b.stack[:0]
}

// Add adds the leaf of key (nibbles, above the last key's and sharing its first
// start nibbles) with payload kind and value or account acc, whose storage
// trie, if any, the caller builds next and gives with setStorage. key, value
// and acc are copied.
func (b *Builder) Add(key []byte, kind vertex.PayloadKind, value []byte, acc *vertex.Account) error {
	if b.has {
		d := hashkey.CommonPrefix(b.last, key)
		if err := b.closeBelow(d); err != nil {
			return err
		}
		if len(b.stack) == 0 || b.stack[len(b.stack)-1].depth < d {
			b.push(d)
		}
		top := b.stack[len(b.stack)-1]
		if d == len(b.last) { // the last key ends at top: its leaf is top's value
			top.value = append(top.value[:0], b.pend.leaf.Value...)
			top.v.Payload, top.v.Value = b.pend.leaf.Payload, top.value
		} else if err := b.placePending(top); err != nil {
			return err
		}
	}
	b.has = true
	b.last = append(b.last[:0], key...)
	p := &b.pend
	p.leaf = vertex.Vertex{Kind: vertex.Leaf, Payload: kind, Value: append(p.leaf.Value[:0], value...)}
	p.root = hashkey.EmptyRoot
	if acc != nil {
		p.account = *acc
		p.leaf.Acc = &p.account
	}
	return nil
}

// SetStorage gives the account just added its storage trie: the trie's ID and
// root hash, which its leaf records (vertex.Account.StorageKey).
func (b *Builder) SetStorage(id vertex.ID, root hashkey.Hash) {
	b.pend.account.Storage, b.pend.root = id, root
	if b.pend.account.StorageKey = (hashkey.Hash{}); id != vertex.NoID {
		b.pend.account.StorageKey = root
	}
}

// Finish closes every open branch, places what remains at the top vertex's
// ID and returns that ID and its key (NoID and a void key for an empty
// trie).
func (b *Builder) Finish() (vertex.ID, hashkey.Key, error) {
	if !b.has {
		return vertex.NoID, hashkey.Key{}, nil
	}
	if err := b.closeBelow(-1); err != nil {
		return vertex.NoID, hashkey.Key{}, err
	}
	id := b.rootID
	if id == vertex.NoID {
		id = b.alloc.Take(1)
	}
	v := b.finish(b.start)
	return id, v.Key, b.emit(id, v)
}

// closeBelow closes the open branches deeper than d, bottom up: each takes the
// pending sub-trie as its last child (in format v2, then takes its slots and
// emits its children) and becomes the pending sub-trie itself.
func (b *Builder) closeBelow(d int) error {
	for len(b.stack) > 0 && b.stack[len(b.stack)-1].depth > d {
		top := b.stack[len(b.stack)-1]
		if err := b.placePending(top); err != nil {
			return err
		}
		if top.v.Kids == nil {
			if err := b.emitHeld(top); err != nil {
				return err
			}
		}
		b.stack = b.stack[:len(b.stack)-1]
		b.pend.branch = top
	}
	return nil
}

// emitHeld gives format-v2 branch ob its 16 slots and emits the children it
// holds there.
func (b *Builder) emitHeld(ob *openBranch) error {
	ob.v.Base = b.alloc.Take(vertex.BranchSlots)
	for n := 0; n < 16; n++ {
		if ob.v.Used&(1<<n) != 0 {
			if err := b.emit(ob.v.Base+vertex.ID(n), &ob.held[n].v); err != nil {
				return err
			}
		}
	}
	return nil
}

// push opens a branch at depth d (a format-v1 branch's child IDs are taken
// as its children are placed, a format-v2 branch's slots when it closes).
func (b *Builder) push(d int) {
	var ob *openBranch
	if n := len(b.free); n > 0 {
		ob, b.free = b.free[n-1], b.free[:n-1]
	} else {
		ob = new(openBranch)
	}
	ob.depth, ob.kids, ob.ids = d, [16]hashkey.Key{}, [16]vertex.ID{}
	ob.v = vertex.Vertex{Kind: vertex.Branch}
	if b.format == vertex.FormatV1 {
		ob.v.Kids = &ob.ids
	}
	b.stack = append(b.stack, ob)
}

// placePending makes the pending sub-trie the child of open branch p at the
// last key's nibble p.depth: in format v1 it takes its ID and is emitted, in
// v2 p holds it until it closes.
func (b *Builder) placePending(p *openBranch) error {
	n := b.last[p.depth]
	if p.v.Kids != nil {
		id := b.alloc.AddChild(&p.v, n)
		v := b.finish(p.depth + 1)
		p.kids[n] = v.Key
		return b.emit(id, v)
	}
	p.v.Used |= 1 << n
	v := b.finish(p.depth + 1)
	p.kids[n] = v.Key
	p.held[n].set(v)
	return nil
}

// finish gives the pending sub-trie its path from nibble start of the last
// key and hashes it; the vertex returned is the builder's scratch, valid
// until the next Add. A finished branch is free for reuse.
func (b *Builder) finish(start int) *vertex.Vertex {
	if ob := b.pend.branch; ob != nil {
		b.pend.branch = nil
		b.free = append(b.free, ob) // not touched before the next push
		ob.v.Path = b.last[start:ob.depth]
		HashBranch(b.enc, &ob.v, &ob.kids, &b.ck)
		return &ob.v
	}
	v := &b.pend.leaf
	v.Path = b.last[start:]
	v.Key = b.enc.LeafKey(v, &b.pend.root)
	return v
}

// HashBranch sets the key of branch v, whose children have keys kids, and
// packs those keys into *ck for its record (the first update below it then
// reads no siblings).
func HashBranch(h *nodeenc.Encoder, v *vertex.Vertex, kids *[16]hashkey.Key, ck *[]byte) {
	v.Key = h.BranchKey(v, kids)
	*ck = vertex.PackChildKeys((*ck)[:0], v.Used, kids)
	v.ChildKeys = *ck
}

// Alloc is the allocator the builder takes IDs from.
func (b *Builder) Alloc() *vertex.Allocator { return b.alloc }
