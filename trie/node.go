package trie

import (
	"fmt"

	"github.com/hexstate/hexstate/trie/internal/framestore"
	"github.com/hexstate/hexstate/vertex"
)

// node is a vertex as frames, readers and the hasher hold it in memory: the
// vertex as stored (its record's fields) plus its hashing state, which no
// record holds.
//
// A node is never changed in place once it is shared — held by a sealed
// frame, or decoded for a reader (each read of a persisted vertex decodes a
// node of its own) — except by the hasher filling in the void key of a node
// its frame owns. Writers own a clone first (Frame.own), whose key is void.
type node struct {
	vertex.Vertex
	// stale marks, in a branch, the children written below since the branch
	// was last hashed, whose keys ChildKeys may no longer hold. A node with
	// stale bits has a void key, so no record ever stores stale child keys.
	stale uint16
	// private marks a node decoded from a record for the one caller that
	// asked (a read of a persisted vertex or of a packed frame's): a frame
	// may take it as its own instead of cloning it (Frame.own). A node a
	// frame holds is never private: whatever stores a decoded node in a frame
	// clears it (Frame.own, hasher.remember, the journal's replay).
	private bool
}

// cloneInto makes c a copy of n that can be changed without affecting n.
// Slices and the account are shared (they are replaced, never mutated); a v1
// child array is copied.
func (n *node) cloneInto(c *node) {
	*c = *n
	c.private = false
	if n.Kids != nil {
		k := *n.Kids
		c.Kids = &k
	}
}

// clone returns a heap copy of n, as cloneInto.
func (n *node) clone() *node {
	c := new(node)
	n.cloneInto(c)
	return c
}

// decodeNode decodes a record into a node of its own: one allocation holds
// the node, the account it may carry and, for a leaf's record, its path and
// value (a branch's children's keys take a second).
func decodeNode(rec []byte) (*node, error) {
	return new(nodeRoom).decode(rec)
}

// decode decodes a record into r's node and returns it.
func (r *nodeRoom) decode(rec []byte) (*node, error) {
	n, acc, buf := r.parts()
	if err := vertex.DecodeIntoBuf(&n.Vertex, acc, rec, buf); err != nil {
		return nil, err
	}
	n.private = true
	return n, nil
}

// decodeRoom is the room newNode gives a record's pieces: a state leaf's
// path (up to 64 nibbles) and a slot's value (up to 32 bytes).
const decodeRoom = 96

// newNode returns a zero node, the account it may carry and room for its
// record's pieces, in one allocation, for a decode into
// (vertex.DecodeIntoBuf).
func newNode() (*node, *vertex.Account, []byte) { return new(nodeRoom).parts() }

// nodeRoom is a node, the account it may carry and room for its record's
// pieces: newNode's one allocation, or one of a slab of them (a replayed
// journal entry's records are decoded into one slab).
type nodeRoom struct {
	n   node
	acc vertex.Account
	buf [decodeRoom]byte
}

// parts returns r's node, account and room, empty.
func (r *nodeRoom) parts() (*node, *vertex.Account, []byte) { return &r.n, &r.acc, r.buf[:0] }

// encode appends n's record to dst: a branch with its children's keys when
// childKeys is set and they are current (no stale bits), else without them.
func (n *node) encode(dst []byte, childKeys bool) []byte {
	if n.ChildKeys != nil && (!childKeys || n.stale != 0) {
		v := n.Vertex
		v.ChildKeys = nil
		return vertex.Encode(dst, &v)
	}
	return vertex.Encode(dst, &n.Vertex)
}

// decodePacked decodes a record of a packed frame (Frame.pack), which the
// frame encoded itself: it cannot fail but through a bug, so a failure
// panics with the record.
func decodePacked(rec []byte) *node {
	n, acc, buf := newNode()
	decodePackedInto(n, acc, buf, rec)
	n.private = true
	return n
}

// decodePackedInto is decodePacked into n and its account acc, both zero,
// with room for its pieces buf (as vertex.DecodeIntoBuf): for a caller that
// decodes one vertex at a time and keeps none.
func decodePackedInto(n *node, acc *vertex.Account, buf, rec []byte) {
	if err := vertex.DecodeIntoBuf(&n.Vertex, acc, rec, buf); err != nil {
		panic(fmt.Sprintf("trie: a packed frame's own record %x does not decode: %v", rec, err))
	}
}

// encodePacked is the record a packed frame keeps of n: with its children's
// keys when they are current, as the cache keeps a branch.
func encodePacked(dst []byte, n *node) []byte { return n.encode(dst, true) }

// packCodec is how a sealed frame packs its vertices (Frame.pack): a
// branch's children's keys are the part a newer version in a later frame
// makes spare (frameChain.add).
var packCodec = framestore.Codec[node]{
	Encode: encodePacked,
	Decode: decodePacked,
	Spare:  vertex.ChildKeysSize,
	Strip:  vertex.AppendWithoutChildKeys,
}
