package nodeenc

import (
	"encoding/binary"

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
	return e.extend(v)
}

// BranchPacked is Branch for a re-hash: the children's keys are kids[n] for
// the slots in fresh and, for v's other used slots, those old holds (packed,
// as vertex.ChildKeys; it must hold every used slot that is not fresh). It
// also appends the packed keys of all v's used slots to keys and returns them
// as packed: the branch's new ChildKeys, built in the same pass over the
// slots instead of unpacking old into kids and packing kids again.
func (e *Encoder) BranchPacked(v *vertex.Vertex, old vertex.ChildKeys, fresh uint16, kids *[16]hashkey.Key, keys []byte) (inner, outer, packed []byte) {
	var refs [16][]byte // each used slot's key bytes, aliasing old or kids
	oldUsed, rest := old.Used(), []byte(old)
	if len(rest) >= 2 {
		rest = rest[2:]
	}
	payload := 0
	for n := 0; n < 16; n++ {
		bit := uint16(1) << n
		var r []byte
		if oldUsed&bit != 0 && len(rest) > 0 {
			l := min(int(rest[0]), len(rest)-1)
			r, rest = rest[1:1+l], rest[1+l:]
		}
		switch {
		case v.Used&bit == 0:
			r = nil
		case fresh&bit != 0:
			r = kids[n].Bytes()
		}
		refs[n] = r
		payload += hashkey.RefSize(r)
	}
	var value []byte
	if v.HasValue() {
		value = e.Payload(v, &hashkey.EmptyRoot)
	}
	b := hashkey.AppendListHeader(e.buf[:0], payload+hashkey.StringSize(value))
	start := len(keys)
	keys = binary.BigEndian.AppendUint16(keys, v.Used)
	for n, r := range refs {
		b = hashkey.AppendRef(b, r)
		if v.Used&(1<<n) != 0 {
			keys = append(append(keys, byte(len(r))), r...)
		}
	}
	e.buf = hashkey.AppendString(b, value)
	inner, outer = e.extend(v)
	return inner, outer, keys[start:len(keys):len(keys)]
}

// extend returns e.buf, the RLP of branch v, as Branch does: with the
// extension node above it appended when v has a path.
func (e *Encoder) extend(v *vertex.Vertex) (inner, outer []byte) {
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
