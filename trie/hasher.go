package trie

import (
	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie/internal/nodeenc"
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
	nodeenc.Encoder
	fr       *Frame
	parallel bool
	depth    int // of the current key computation, against reference cycles
	pending  []pendingKey
	keyArena []byte           // backing store of the ChildKeys encode packs to keep
	scratch  []byte           // the packed keys of an encode that keeps none
	accounts []vertex.Account // slab of the accounts recordStorageKey makes
}

type pendingKey struct {
	id vertex.ID
	v  *node
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
	var (
		inner, outer []byte
		ck           vertex.ChildKeys
		root         hashkey.Hash // a leaf's storage root, for remember
	)
	if v.Kind == vertex.Leaf {
		inner, root, err = h.encodeLeaf(v)
	} else {
		inner, outer, ck, err = h.encode(v, true)
	}
	h.depth--
	if err != nil {
		return hashkey.Key{}, err
	}
	k := h.NodeKey(inner, outer)
	h.remember(id, v, k, ck, root)
	return k, nil
}

// encodeLeaf returns the RLP of leaf v's node (aliasing the hasher's buffer,
// as encode's) and its storage root, the empty root for none.
func (h *hasher) encodeLeaf(v *node) ([]byte, hashkey.Hash, error) {
	root, err := h.storageRoot(v)
	if err != nil {
		return nil, root, err
	}
	return h.Leaf(&v.Vertex, &root), root, nil
}

// encode returns the RLP of v's node: for a leaf or a plain branch in inner; for a
// branch fused with an extension, the branch node in inner and the extension node
// in outer. Both alias the hasher's buffers, valid until its next use. For a
// branch it also returns its children's keys packed: those that did not change
// since the branch was last hashed come from its ChildKeys, the others are
// computed. With keep they are in the hasher's arena, to be remembered; else
// in a scratch buffer valid until the next encode (a proof's).
func (h *hasher) encode(v *node, keep bool) (inner, outer []byte, ck vertex.ChildKeys, err error) {
	if v.Kind == vertex.Leaf {
		inner, _, err := h.encodeLeaf(v)
		return inner, nil, nil, err
	}
	// need: the used slots whose keys ChildKeys lacks or may have wrong (stale).
	need := v.Used
	if v.ChildKeys != nil {
		need &= v.stale | ^v.ChildKeys.Used()
	} else if err := h.fr.db.prefetchChildren(h.fr, v); err != nil {
		return nil, nil, nil, err
	}
	var kids [16]hashkey.Key // the keys of the slots in need
	for n := 0; n < 16; n++ {
		if need&(1<<n) == 0 {
			continue
		}
		if c := v.Child(n); c != vertex.NoID {
			k, err := h.key(c)
			if err != nil {
				return nil, nil, nil, err
			}
			if k.IsVoid() {
				return nil, nil, nil, vertexError(c, ErrMissingVertex)
			}
			kids[n] = k
		}
	}
	const maxPacked = 2 + 16*33 // a bitmap and sixteen keys
	if !keep {
		if cap(h.scratch) < maxPacked {
			h.scratch = make([]byte, 0, maxPacked)
		}
		inner, outer, packed := h.BranchPacked(&v.Vertex, v.ChildKeys, need, &kids, h.scratch[:0])
		return inner, outer, packed, nil
	}
	if cap(h.keyArena)-len(h.keyArena) < maxPacked {
		h.keyArena = make([]byte, 0, 16<<10)
	}
	inner, outer, packed := h.BranchPacked(&v.Vertex, v.ChildKeys, need, &kids, h.keyArena)
	h.keyArena = h.keyArena[:len(h.keyArena)+len(packed)]
	return inner, outer, packed, nil
}

// storageRoot returns the storage root of leaf v: the key of its storage
// trie for an account with storage (the one its leaf records, when it
// does), else the empty root.
func (h *hasher) storageRoot(v *node) (hashkey.Hash, error) {
	root := hashkey.EmptyRoot
	if v.Payload == vertex.AccountPayload && v.Acc.Storage != vertex.NoID {
		if r := v.Acc.StorageKey; r != (hashkey.Hash{}) {
			return r, nil
		}
		k, err := h.key(v.Acc.Storage)
		if err != nil {
			return root, err
		}
		if k.IsVoid() {
			return root, vertexError(v.Acc.Storage, ErrMissingVertex)
		}
		root = k.Hash()
	}
	return root, nil
}

// remember records key k of vertex v (as seen at id), and for a branch its
// children's keys ck, where the next read finds them; for an account leaf
// of the frames, its storage root (root; zero for a branch) goes in its
// account (vertex.Account.StorageKey), so that its record carries it.
func (h *hasher) remember(id vertex.ID, v *node, k hashkey.Key, ck vertex.ChildKeys, root hashkey.Hash) {
	fr := h.fr
	if cur, _ := fr.vtx.Lookup(id); cur == v {
		// Owned: disjoint sub-tries never share a vertex, so this is race-free.
		v.Key, v.ChildKeys, v.stale = k, ck, 0
		h.recordStorageKey(v, root)
		return
	}
	if !fr.inFrames(id) {
		fr.db.cacheKey(id, v, k, ck) // persisted vertex: cache the key
		return
	}
	c := v // a node decoded for this hash alone is the hasher's to keep
	if !v.private {
		c = v.clone()
	}
	c.Key, c.ChildKeys, c.stale, c.private = k, ck, 0, false
	h.recordStorageKey(c, root)
	if h.parallel {
		h.pending = append(h.pending, pendingKey{id, c})
		return
	}
	fr.vtx.Set(id, c)
}

// inFrames reports whether fr or a parent frame (not the database) holds vertex id.
func (fr *Frame) inFrames(id vertex.ID) bool {
	_, ok := fr.inChain(id)
	return ok
}

// recordStorageKey puts root, the storage root just computed for account
// leaf n (zero: none computed), in n's account unless it is there already.
// The account is replaced, not changed: clones share it. The new one comes
// from the hasher's slab, as a frame's accounts come from the frame's.
func (h *hasher) recordStorageKey(n *node, root hashkey.Hash) {
	if root == (hashkey.Hash{}) || n.Acc == nil || n.Acc.Storage == vertex.NoID || n.Acc.StorageKey == root {
		return
	}
	a := take(&h.accounts, 64)
	*a = *n.Acc
	a.StorageKey = root
	n.Acc = a
}
