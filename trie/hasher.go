package trie

import (
	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/vertex"
)

// hasher computes hash keys lazily and bottom-up. A vertex's key is cached in the
// vertex; a write voids the keys on its path only (Frame.own), so a later hash walks
// down only into vertices whose key is void and re-hashes nothing else.
//
// Where a computed key goes depends on who holds the vertex: a vertex the frame
// owns gets it in place; one inherited from a parent frame is cloned into this
// frame with the key; a persisted one gets it in the database's cache. In parallel
// mode (several hashers on disjoint sub-tries of one frame) the frame's map must
// not be written, so clones are queued in pending and applied afterwards.
type hasher struct {
	fr       *Frame
	buf      []byte // node RLP
	vbuf     []byte // leaf value RLP
	parallel bool
	depth    int // of the current key computation, against reference cycles
	pending  []pendingKey
	keyArena []byte // backing store of the ChildKeys packed by childKeys
	kh       *hashkey.Hasher
}

type pendingKey struct {
	id vertex.ID
	v  *vertex.Vertex
}

// key returns the hash key of vertex id (void for no vertex).
func (h *hasher) key(id vertex.ID) (hashkey.Key, error) {
	v, err := h.fr.get(id)
	if err != nil || v == nil {
		return hashkey.Key{}, err
	}
	if !v.Key.IsVoid() {
		return v.Key, nil
	}
	if h.depth >= maxDepth {
		return hashkey.Key{}, vertexError(id, errTooDeep)
	}
	h.depth++
	var kids [16]hashkey.Key
	inner, outer, err := h.encode(v, &kids)
	h.depth--
	if err != nil {
		return hashkey.Key{}, err
	}
	k := h.nodeKey(inner, outer)
	h.remember(id, v, k, &kids)
	return k, nil
}

// nodeKey is the key of a node encode returned: the extension's when there is
// one, else the node's own.
func (h *hasher) nodeKey(inner, outer []byte) hashkey.Key {
	if outer != nil {
		return h.keyOf(outer)
	}
	return h.keyOf(inner)
}

// keyOf returns the key of a node whose RLP is rlp, with the hasher's own
// Keccak state.
func (h *hasher) keyOf(rlp []byte) hashkey.Key {
	if h.kh == nil {
		h.kh = hashkey.NewHasher()
	}
	return h.kh.KeyOf(rlp)
}

// childKeys packs the keys kids[n] of the slots set in used, in the hasher's
// arena (16 KiB at a time).
func (h *hasher) childKeys(used uint16, kids *[16]hashkey.Key) vertex.ChildKeys {
	if cap(h.keyArena)-len(h.keyArena) < 2+16*33 {
		h.keyArena = make([]byte, 0, 16<<10)
	}
	start := len(h.keyArena)
	h.keyArena = vertex.PackChildKeys(h.keyArena, used, kids)
	return vertex.ChildKeys(h.keyArena[start:len(h.keyArena):len(h.keyArena)])
}

// encode returns the RLP of v's node: for a leaf or a plain branch in inner; for a
// branch fused with an extension, the branch node in inner and the extension node
// in outer. Both alias the hasher's buffers, valid until its next use. For a
// branch it fills kids with the children's keys, taking those that did not change
// since the branch was last hashed from its ChildKeys.
func (h *hasher) encode(v *vertex.Vertex, kids *[16]hashkey.Key) (inner, outer []byte, err error) {
	if v.Kind == vertex.Leaf {
		value, err := h.value(v)
		if err != nil {
			return nil, nil, err
		}
		h.buf = hashkey.AppendLeaf(h.buf[:0], v.Path, value)
		return h.buf, nil, nil
	}
	need := v.Used
	if v.ChildKeys != nil {
		v.ChildKeys.Unpack(kids)
		need &= v.Stale | ^v.ChildKeys.Used()
	} else if err := h.fr.db.prefetchChildren(h.fr, v); err != nil {
		return nil, nil, err
	}
	for n := 0; n < 16; n++ {
		if v.Used&(1<<n) == 0 {
			kids[n] = hashkey.Key{} // a slot emptied since ChildKeys was packed
			continue
		}
		if need&(1<<n) == 0 {
			continue
		}
		if c := v.Child(n); c != vertex.NoID {
			k, err := h.key(c)
			if err != nil {
				return nil, nil, err
			}
			if k.IsVoid() {
				return nil, nil, vertexError(c, ErrMissingVertex)
			}
			kids[n] = k
		}
	}
	return h.encodeBranch(v, kids)
}

// encodeBranch is encode for a branch whose children's keys are in kids.
func (h *hasher) encodeBranch(v *vertex.Vertex, kids *[16]hashkey.Key) (inner, outer []byte, err error) {
	var value []byte
	if v.HasValue() {
		if value, err = h.value(v); err != nil {
			return nil, nil, err
		}
	}
	h.buf = hashkey.AppendBranch(h.buf[:0], kids, value)
	if len(v.Path) == 0 {
		return h.buf, nil, nil
	}
	k := h.keyOf(h.buf)
	n := len(h.buf)
	h.buf = hashkey.AppendExtension(h.buf, v.Path, &k)
	return h.buf[:n], h.buf[n:], nil
}

// value returns the bytes a leaf node stores as its value (payloadRLP), reading
// an account's storage root key.
func (h *hasher) value(v *vertex.Vertex) ([]byte, error) {
	root := hashkey.EmptyRoot
	if v.Payload == vertex.AccountPayload && v.Acc.Storage != vertex.NoID {
		k, err := h.key(v.Acc.Storage)
		if err != nil {
			return nil, err
		}
		if k.IsVoid() {
			return nil, vertexError(v.Acc.Storage, ErrMissingVertex)
		}
		root = k.Hash()
	}
	return h.payloadRLP(v, &root), nil
}

// leafKey returns the key of leaf v whose account (if it is one) has storage
// root root: for builders that hold the root already and need no lookup.
func (h *hasher) leafKey(v *vertex.Vertex, root *hashkey.Hash) hashkey.Key {
	h.buf = hashkey.AppendLeaf(h.buf[:0], v.Path, h.payloadRLP(v, root))
	return h.keyOf(h.buf)
}

// payloadRLP returns the bytes a leaf node stores as its value: raw bytes as
// they are, a slot as RLP of its minimal big-endian value, an account as
// RLP[nonce, balance, storageRoot, codeHash] with root as its storage root.
func (h *hasher) payloadRLP(v *vertex.Vertex, root *hashkey.Hash) []byte {
	switch v.Payload {
	case vertex.SlotPayload:
		h.vbuf = hashkey.AppendString(h.vbuf[:0], v.Value)
		return h.vbuf
	case vertex.AccountPayload:
		h.vbuf = appendAccountRLP(h.vbuf[:0], v.Acc, root)
		return h.vbuf
	}
	return v.Value
}

// appendAccountRLP appends RLP[nonce, balance, storageRoot, codeHash].
func appendAccountRLP(dst []byte, a *vertex.Account, root *hashkey.Hash) []byte {
	var bal [32]byte
	a.Balance.WriteToArray32(&bal)
	balBytes := trimLeadingZeros(bal[:])
	payload := hashkey.Uint64Size(a.Nonce) + hashkey.StringSize(balBytes) + 33 + 33
	dst = hashkey.AppendListHeader(dst, payload)
	dst = hashkey.AppendUint64(dst, a.Nonce)
	dst = hashkey.AppendString(dst, balBytes)
	dst = hashkey.AppendString(dst, root[:])
	return hashkey.AppendString(dst, a.CodeHash[:])
}

func trimLeadingZeros(b []byte) []byte {
	for len(b) > 0 && b[0] == 0 {
		b = b[1:]
	}
	return b
}

// remember records key k of vertex v (as seen at id) where the next read finds it.
func (h *hasher) remember(id vertex.ID, v *vertex.Vertex, k hashkey.Key, kids *[16]hashkey.Key) {
	fr := h.fr
	var ck vertex.ChildKeys
	if v.Kind == vertex.Branch {
		ck = h.childKeys(v.Used, kids)
	}
	if cur, _ := fr.vtx.Lookup(id); cur == v {
		// Owned: disjoint sub-tries never share a vertex, so this is race-free.
		v.Key, v.ChildKeys, v.Stale = k, ck, 0
		return
	}
	if !fr.inFrames(id) {
		fr.db.cacheKey(id, v, k, ck) // persisted vertex: cache the key
		return
	}
	c := v.Clone()
	c.Key, c.ChildKeys, c.Stale = k, ck, 0
	if h.parallel {
		h.pending = append(h.pending, pendingKey{id, c})
		return
	}
	fr.vtx.Set(id, c)
}

// inFrames reports whether fr or a parent frame (not the database) holds vertex id.
func (fr *Frame) inFrames(id vertex.ID) bool {
	for f := fr; f != nil; f = f.parent {
		if _, ok := f.vtx.Lookup(id); ok {
			return true
		}
	}
	return false
}
