package trie

import "github.com/hexstate/hexstate/vertex"

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
}

// cloneInto makes c a copy of n that can be changed without affecting n.
// Slices and the account are shared (they are replaced, never mutated); a v1
// child array is copied.
func (n *node) cloneInto(c *node) {
	*c = *n
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

// decodeNode decodes a record into a node of its own (one allocation holds
// the node and the account it may carry).
func decodeNode(rec []byte) (*node, error) {
	n, acc := newNode()
	if err := vertex.DecodeInto(&n.Vertex, acc, rec); err != nil {
		return nil, err
	}
	return n, nil
}

// newNode returns a zero node and the account it may carry, in one
// allocation, for a decode into.
func newNode() (*node, *vertex.Account) {
	na := new(struct {
		n   node
		acc vertex.Account
	})
	return &na.n, &na.acc
}

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
