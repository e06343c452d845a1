package nodeenc

import (
	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/vertex"
)

// Encoder encodes and hashes nodes in buffers of its own. What it returns
// aliases those buffers and is valid until its next use. The zero value is
// ready; an Encoder is not safe for concurrent use.
type Encoder struct {
	buf  []byte // node RLP
	vbuf []byte // leaf value RLP
	kh   *hashkey.Hasher
}

// KeyOf returns the hash key of a node whose RLP is rlp: the RLP itself when
// under 32 bytes, else its Keccak-256.
func (e *Encoder) KeyOf(rlp []byte) hashkey.Key {
	if e.kh == nil {
		e.kh = hashkey.NewHasher()
	}
	return e.kh.KeyOf(rlp)
}

// NodeKey is the key of a node Branch returned: the extension's when there is
// one (outer), else the node's own.
func (e *Encoder) NodeKey(inner, outer []byte) hashkey.Key {
	if outer != nil {
		return e.KeyOf(outer)
	}
	return e.KeyOf(inner)
}

// Leaf returns the RLP of leaf v; an account leaf's storage root is root.
func (e *Encoder) Leaf(v *vertex.Vertex, root *hashkey.Hash) []byte {
	e.buf = hashkey.AppendLeaf(e.buf[:0], v.Path, e.Payload(v, root))
	return e.buf
}

// LeafKey returns the key of leaf v; an account leaf's storage root is root.
func (e *Encoder) LeafKey(v *vertex.Vertex, root *hashkey.Hash) hashkey.Key {
	return e.KeyOf(e.Leaf(v, root))
}

// Branch returns the RLP of branch v whose children's keys are kids (void for
// an unused slot): the branch node in inner and, when v has a path, the
// extension node above it in outer (nil otherwise). A branch's own value, if
// it has one, is a raw or slot payload (a key that ends at a branch exists
// only in generic tries).
func (e *Encoder) Branch(v *vertex.Vertex, kids *[16]hashkey.Key) (inner, outer []byte) {
	var value []byte
	if v.HasValue() {
		value = e.Payload(v, &hashkey.EmptyRoot)
	}
	e.buf = hashkey.AppendBranch(e.buf[:0], kids, value)
	if len(v.Path) == 0 {
		return e.buf, nil
	}
	k := e.KeyOf(e.buf)
	n := len(e.buf)
	e.buf = hashkey.AppendExtension(e.buf, v.Path, &k)
	return e.buf[:n], e.buf[n:]
}

// BranchKey is the key of branch v whose children's keys are kids.
func (e *Encoder) BranchKey(v *vertex.Vertex, kids *[16]hashkey.Key) hashkey.Key {
	return e.NodeKey(e.Branch(v, kids))
}

// Payload returns the bytes a leaf node stores as its value: raw bytes as
// they are, a slot as RLP of its minimal big-endian value, an account as
// RLP[nonce, balance, storageRoot, codeHash] with root as its storage root.
func (e *Encoder) Payload(v *vertex.Vertex, root *hashkey.Hash) []byte {
	switch v.Payload {
	case vertex.SlotPayload:
		e.vbuf = hashkey.AppendString(e.vbuf[:0], v.Value)
		return e.vbuf
	case vertex.AccountPayload:
		e.vbuf = AppendAccount(e.vbuf[:0], v.Acc, root)
		return e.vbuf
	}
	return v.Value
}

// AppendAccount appends RLP[nonce, balance, storageRoot, codeHash] of a with
// storage root root.
func AppendAccount(dst []byte, a *vertex.Account, root *hashkey.Hash) []byte {
	var bal [32]byte
	a.Balance.WriteToArray32(&bal)
	balBytes := TrimLeadingZeros(bal[:])
	payload := hashkey.Uint64Size(a.Nonce) + hashkey.StringSize(balBytes) + 33 + 33
	dst = hashkey.AppendListHeader(dst, payload)
	dst = hashkey.AppendUint64(dst, a.Nonce)
	dst = hashkey.AppendString(dst, balBytes)
	dst = hashkey.AppendString(dst, root[:])
	return hashkey.AppendString(dst, a.CodeHash[:])
}

// TrimLeadingZeros returns b without its leading zero bytes (a big-endian
// number's minimal form).
func TrimLeadingZeros(b []byte) []byte {
	for len(b) > 0 && b[0] == 0 {
		b = b[1:]
	}
	return b
}
