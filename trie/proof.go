package trie

import (
	"bytes"
	"fmt"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/vertex"
)

// prove returns the Merkle proof of key in the frame's trie (see proveAt).
func (fr *Frame) prove(key []byte) ([][]byte, error) {
	if err := fr.enter(useHash, "prove"); err != nil {
		return nil, err
	}
	defer fr.leave(useHash)
	return fr.proveAt(vertex.RootID, hashkey.AppendNibbles(nil, key))
}

// proveAt returns the proof of the nibble path in the trie rooted at root: the RLP
// of every node on the path that its parent refers to by hash, plus the root node,
// in order from the root. A fused branch yields its extension node and, when that
// does not embed it, its branch node. Nodes under 32 bytes are embedded in their
// parents and not listed, exactly as go-ethereum's Prove. The proof of an absent
// key ends at the node where its path leaves the trie.
func (fr *Frame) proveAt(root vertex.ID, path []byte) ([][]byte, error) {
	if _, err := fr.rootKey(root); err != nil {
		return nil, err
	}
	var proof [][]byte
	add := func(rlp []byte) {
		if len(proof) == 0 || len(rlp) >= 32 {
			proof = append(proof, bytes.Clone(rlp))
		}
	}
	h := &fr.h
	for id, must := root, root != vertex.RootID; ; must = true {
		v, err := fr.lookup(id, must)
		if err != nil || v == nil {
			return proof, err
		}
		inner, outer, _, err := h.encode(v, false)
		if err != nil {
			return nil, err
		}
		if outer != nil {
			add(outer)
		}
		if !bytes.HasPrefix(path, v.Path) || v.Kind == vertex.Leaf {
			if v.Kind == vertex.Leaf {
				add(inner)
			}
			return proof, nil
		}
		add(inner)
		path = path[len(v.Path):]
		if len(path) == 0 {
			return proof, nil
		}
		if id = v.Child(int(path[0])); id == vertex.NoID {
			return proof, nil
		}
		path = path[1:]
	}
}

// VerifyProof checks proof against root for key. It returns the value proven, nil
// for a valid proof that key is absent, or an error wrapping ErrBadProof when the
// proof is incomplete, malformed or does not match root. proof is a list of node
// RLPs in any order (extra nodes are ignored).
func VerifyProof(root hashkey.Hash, key []byte, proof [][]byte) ([]byte, error) {
	if root == hashkey.EmptyRoot {
		return nil, nil
	}
	nodes := make(map[hashkey.Hash][]byte, len(proof))
	for _, n := range proof {
		nodes[hashkey.Keccak256(n)] = n
	}
	path := hashkey.AppendNibbles(nil, key)
	node, ok := nodes[root]
	if !ok {
		return nil, fmt.Errorf("%w: root node %v missing", ErrBadProof, root)
	}
	for depth := 0; ; depth++ {
		items, err := splitNode(node)
		if err != nil {
			return nil, fmt.Errorf("%w: node at depth %d: %v", ErrBadProof, depth, err)
		}
		var ref []byte
		if len(items) == 2 {
			nibbles, leaf, err := hashkey.DecodeHexPrefix(nil, items[0].content)
			if err != nil || items[0].kind != hashkey.String {
				return nil, fmt.Errorf("%w: bad path at depth %d", ErrBadProof, depth)
			}
			if leaf {
				if items[1].kind != hashkey.String {
					return nil, fmt.Errorf("%w: leaf value is a list at depth %d", ErrBadProof, depth)
				}
				if !bytes.Equal(nibbles, path) {
					return nil, nil
				}
				return bytes.Clone(items[1].content), nil
			}
			if len(path) < len(nibbles) || !bytes.Equal(nibbles, path[:len(nibbles)]) {
				return nil, nil
			}
			path, ref = path[len(nibbles):], items[1].raw
		} else {
			if len(path) == 0 {
				if items[16].kind != hashkey.String {
					return nil, fmt.Errorf("%w: branch value is a list at depth %d", ErrBadProof, depth)
				}
				if len(items[16].content) == 0 {
					return nil, nil
				}
				return bytes.Clone(items[16].content), nil
			}
			path, ref = path[1:], items[path[0]].raw
		}
		if node, err = resolveRef(ref, nodes); node == nil || err != nil {
			if err != nil {
				err = fmt.Errorf("%w: depth %d: %v", ErrBadProof, depth, err)
			}
			return nil, err
		}
	}
}

type rlpItem struct {
	kind    hashkey.Kind
	content []byte
	raw     []byte // the item with its header
}

// splitNode splits a node's RLP into its 2 or 17 items.
func splitNode(node []byte) ([]rlpItem, error) {
	payload, rest, err := hashkey.SplitList(node)
	if err != nil {
		return nil, err
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%d bytes after the node", len(rest))
	}
	items := make([]rlpItem, 0, 17)
	for len(payload) > 0 {
		k, content, rest, err := hashkey.Split(payload)
		if err != nil {
			return nil, err
		}
		items = append(items, rlpItem{k, content, payload[:len(payload)-len(rest)]})
		payload = rest
	}
	if len(items) != 2 && len(items) != 17 {
		return nil, fmt.Errorf("node with %d items", len(items))
	}
	return items, nil
}

// resolveRef turns a child reference into the child's RLP: an embedded list is the
// node itself, a 32-byte string names a proof node, the empty string means no
// child (nil, nil).
func resolveRef(ref []byte, nodes map[hashkey.Hash][]byte) ([]byte, error) {
	k, content, _, err := hashkey.Split(ref)
	switch {
	case err != nil:
		return nil, err
	case k == hashkey.List:
		return ref, nil
	case len(content) == 0:
		return nil, nil
	case len(content) != 32:
		return nil, fmt.Errorf("child reference of %d bytes", len(content))
	}
	n, ok := nodes[hashkey.Hash(content)]
	if !ok {
		return nil, fmt.Errorf("node %x missing", content)
	}
	return n, nil
}
