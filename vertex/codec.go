package vertex

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

	"github.com/hexstate/hexstate/hashkey"
)

// The binary record of a vertex; docs/format.md specifies every byte.
//
//	record  = tag body
//	tag     = kind (bits 0-1: 1 leaf, 2 branch v2, 3 branch v1)
//	        | payload kind << 2 (bits 2-3) | has-key << 4 (bit 4)
//	        | has-child-keys << 5 (bit 5); bits 6-7 zero
//	leaf    = path payload
//	branch2 = [key32] used16 sbe(base) [childkeys] path [payload]
//	branch1 = [key32] used16 sbe(child id) for each set bit, ascending; [childkeys] path [payload]
//	childkeys = (len8 key) for each set bit, ascending  (len 1..32: a hash or an embedded node)
//	path    = uvarint(len hp) hp          (hex-prefix, leaf flag set for leaves)
//	sbe(x)  = len8 minimal-big-endian(x)  (no leading zero byte; 0 is len 0)
//	payload = raw: uvarint(len) bytes (len >= 1)
//	        | account: mask8 [sbe nonce] [sbe balance] [codeHash32] [sbe storage id]
//	        | slot: sbe(value), value != 0
//
// Encodings are canonical: Decode accepts exactly the bytes Encode produces, so a
// decoded record re-encodes to itself.

const (
	tagLeaf     = 1
	tagBranchV2 = 2
	tagBranchV1 = 3
	tagHasKey   = 1 << 4
	tagChildKey = 1 << 5

	accNonce   = 1 << 0
	accBalance = 1 << 1
	accCode    = 1 << 2
	accStorage = 1 << 3
	accRootKey = 1 << 4 // the storage root's key, after the storage ID
)

// RecordKind returns the kind of vertex record rec holds, read from its tag
// byte alone: Leaf, Branch (either format's body), or 0 for an empty record
// or an invalid kind. It checks nothing else; Decode does.
func RecordKind(rec []byte) Kind {
	if len(rec) == 0 {
		return 0
	}
	switch rec[0] & 3 {
	case tagLeaf:
		return Leaf
	case tagBranchV2, tagBranchV1:
		return Branch
	}
	return 0
}

// ErrCorrupt is wrapped by every error Decode returns.
var ErrCorrupt = errors.New("corrupt vertex record")

// CorruptError says why a record failed to decode and at which byte offset.
type CorruptError struct {
	Offset int
	Reason string
}

// Error says why the record was rejected and where.
func (e *CorruptError) Error() string {
	return fmt.Sprintf("%v: %s at byte %d", ErrCorrupt, e.Reason, e.Offset)
}

// Unwrap makes errors.Is(err, ErrCorrupt) hold.
func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// Encode appends the record of v to dst. A branch is written in format v1 when it
// has a child array (Kids) and in format v2 otherwise. Only a branch's key is
// stored, and only when it is a 32-byte hash; with it go its children's keys when
// they are known (ChildKeys, for every used slot), so that re-hashing the
// branch after a write below one child needs no read of the other children.
func Encode(dst []byte, v *Vertex) []byte {
	tag := byte(v.Payload) << 2
	switch {
	case v.Kind == Leaf:
		tag |= tagLeaf
	case v.Kids != nil:
		tag |= tagBranchV1
	default:
		tag |= tagBranchV2
	}
	if v.Kind == Branch && v.Key.IsHash() {
		tag |= tagHasKey
		if v.ChildKeys != nil && v.ChildKeys.Used() == v.Used {
			tag |= tagChildKey
		}
	}
	dst = append(dst, tag)
	if v.Kind == Branch {
		if tag&tagHasKey != 0 {
			dst = append(dst, v.Key.Bytes()...)
		}
		dst = binary.BigEndian.AppendUint16(dst, v.Used)
		if v.Kids != nil {
			for n := 0; n < 16; n++ {
				if v.Used&(1<<n) != 0 {
					dst = appendSBE(dst, uint64(v.Kids[n]))
				}
			}
		} else {
			dst = appendSBE(dst, uint64(v.Base))
		}
		if tag&tagChildKey != 0 {
			dst = append(dst, v.ChildKeys[2:]...)
		}
	}
	hpLen := hashkey.HexPrefixSize(len(v.Path))
	dst = binary.AppendUvarint(dst, uint64(hpLen))
	dst = hashkey.AppendHexPrefix(dst, v.Path, v.Kind == Leaf)
	return appendPayload(dst, v)
}

func appendPayload(dst []byte, v *Vertex) []byte {
	switch v.Payload {
	case RawPayload:
		dst = binary.AppendUvarint(dst, uint64(len(v.Value)))
		dst = append(dst, v.Value...)
	case SlotPayload:
		dst = append(dst, byte(len(v.Value)))
		dst = append(dst, v.Value...)
	case AccountPayload:
		a := v.Acc
		mask := byte(0)
		if a.Nonce != 0 {
			mask |= accNonce
		}
		if !a.Balance.IsZero() {
			mask |= accBalance
		}
		if a.CodeHash != hashkey.EmptyCodeHash {
			mask |= accCode
		}
		if a.Storage != NoID {
			mask |= accStorage
			if a.StorageKey != (hashkey.Hash{}) {
				mask |= accRootKey
			}
		}
		dst = append(dst, mask)
		if mask&accNonce != 0 {
			dst = appendSBE(dst, a.Nonce)
		}
		if mask&accBalance != 0 {
			b := a.Balance.Bytes32()
			i := 0
			for i < 31 && b[i] == 0 {
				i++
			}
			dst = append(dst, byte(32-i))
			dst = append(dst, b[i:]...)
		}
		if mask&accCode != 0 {
			dst = append(dst, a.CodeHash[:]...)
		}
		if mask&accStorage != 0 {
			dst = appendSBE(dst, uint64(a.Storage))
		}
		if mask&accRootKey != 0 {
			dst = append(dst, a.StorageKey[:]...)
		}
	}
	return dst
}

func appendSBE(dst []byte, x uint64) []byte {
	n := (bits.Len64(x) + 7) / 8
	dst = append(dst, byte(n))
	for i := n - 1; i >= 0; i-- {
		dst = append(dst, byte(x>>(8*i)))
	}
	return dst
}

// decoder walks a record, remembering the first error.
type decoder struct {
	b   []byte
	off int
	err error
	buf []byte // backing store of the decoded vertex's slices
}

func (d *decoder) fail(reason string) {
	if d.err == nil {
		d.err = &CorruptError{Offset: d.off, Reason: reason}
	}
}

func (d *decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b)-d.off {
		d.fail(fmt.Sprintf("%d bytes needed, %d left", n, len(d.b)-d.off))
		return nil
	}
	s := d.b[d.off : d.off+n]
	d.off += n
	return s
}

// sbe reads a minimal big-endian integer of at most max bytes.
func (d *decoder) sbe(max int) []byte {
	l := d.take(1)
	if l == nil {
		return nil
	}
	if int(l[0]) > max {
		d.fail(fmt.Sprintf("integer of %d bytes, at most %d allowed", l[0], max))
		return nil
	}
	s := d.take(int(l[0]))
	if len(s) > 0 && s[0] == 0 {
		d.fail("integer with a leading zero byte")
	}
	return s
}

func (d *decoder) uint64() uint64 {
	var x uint64
	for _, c := range d.sbe(8) {
		x = x<<8 | uint64(c)
	}
	return x
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	x, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.fail("bad length varint")
		return 0
	}
	if n != max(1, (bits.Len64(x)+6)/7) {
		d.fail("non-minimal length varint")
	}
	d.off += n
	return x
}

// Decode parses a record made by Encode. It copies what it keeps, so b may be
// reused. Every malformed input gives a *CorruptError; it never panics.
func Decode(b []byte) (*Vertex, error) {
	// One allocation holds the vertex and the account it may carry.
	va := new(struct {
		v   Vertex
		acc Account
	})
	if err := DecodeInto(&va.v, &va.acc, b); err != nil {
		return nil, err
	}
	return &va.v, nil
}

// DecodeInto is Decode into memory the caller provides: v, which must be zero,
// and acc, which an account payload uses (v.Acc then points at it). On error
// v holds no meaningful vertex.
func DecodeInto(v *Vertex, acc *Account, b []byte) error {
	return DecodeIntoBuf(v, acc, b, nil)
}

// DecodeIntoBuf is DecodeInto keeping what v's slices hold (its path, value
// and children's keys) in buf's spare capacity, and in a new allocation only
// for what does not fit: a caller can allocate the vertex and room for a
// small record's pieces at once (a nil buf: one allocation of about the
// record's size, as DecodeInto). buf must not be used for anything else for
// as long as v is.
func DecodeIntoBuf(v *Vertex, acc *Account, b, buf []byte) error {
	if buf == nil {
		buf = make([]byte, 0, len(b)+64)
	}
	// One buffer holds the path, value and children's keys (each piece capped,
	// so that an append to one never writes into the next): decoding is on the
	// path of every cached read.
	d := &decoder{b: b, buf: buf[:0]}
	tag := d.take(1)
	if tag == nil {
		return d.err
	}
	t := tag[0]
	if t&0xc0 != 0 {
		d.fail(fmt.Sprintf("tag 0x%02x has reserved bits set", t))
	}
	v.Payload = PayloadKind(t >> 2 & 3)
	switch t & 3 {
	case tagLeaf:
		v.Kind = Leaf
		if t&(tagHasKey|tagChildKey) != 0 {
			d.fail("leaf record with a key")
		}
		if v.Payload == NoPayload {
			d.fail("leaf without payload")
		}
	case tagBranchV2, tagBranchV1:
		v.Kind = Branch
		if t&tagHasKey != 0 {
			k, _ := hashkey.KeyFromBytes(d.take(32))
			v.Key = k
		}
		if u := d.take(2); u != nil {
			v.Used = binary.BigEndian.Uint16(u)
		}
		if t&3 == tagBranchV1 {
			v.Kids = new([16]ID)
			for n := 0; n < 16; n++ {
				if v.Used&(1<<n) != 0 {
					if v.Kids[n] = ID(d.uint64()); v.Kids[n] == NoID && d.err == nil {
						d.fail("child ID 0")
					}
				}
			}
		} else {
			v.Base = ID(d.uint64())
			if v.Used != 0 && v.Base == NoID && d.err == nil {
				d.fail("branch base ID 0")
			}
			if v.Base > ^ID(0)-BranchSlots+1 && d.err == nil {
				d.fail("branch slots past the last ID")
			}
		}
		if t&tagChildKey != 0 {
			if t&tagHasKey == 0 {
				d.fail("child keys without the branch's own key")
			}
			start := d.off
			for n := 0; n < 16 && d.err == nil; n++ {
				if v.Used&(1<<n) != 0 {
					l := d.take(1)
					if l != nil && (l[0] == 0 || l[0] > 32) {
						d.fail(fmt.Sprintf("child key of %d bytes", l[0]))
					}
					if l != nil && d.err == nil {
						d.take(int(l[0]))
					}
				}
			}
			if d.err == nil {
				mark := len(d.buf)
				d.buf = binary.BigEndian.AppendUint16(d.buf, v.Used)
				d.buf = append(d.buf, b[start:d.off]...)
				v.ChildKeys = d.piece(mark)
			}
		}
	default:
		d.fail("unknown vertex kind")
	}
	if d.err != nil {
		return d.err
	}
	hpLen := d.uvarint()
	if hpLen == 0 && d.err == nil {
		d.fail("empty hex-prefix path")
	}
	if hp := d.take(int(min(hpLen, uint64(len(b))+1))); hp != nil {
		mark := len(d.buf)
		var leaf bool
		var err error
		d.buf, leaf, err = hashkey.DecodeHexPrefix(d.buf, hp)
		path := d.piece(mark)
		switch {
		case err != nil:
			d.fail(err.Error())
		case leaf != (v.Kind == Leaf):
			d.fail("hex-prefix leaf flag does not match the vertex kind")
		}
		if len(path) > 0 {
			v.Path = path
		}
	}
	d.payload(v, acc)
	if d.err == nil && d.off != len(b) {
		d.fail(fmt.Sprintf("%d trailing bytes", len(b)-d.off))
	}
	if d.err != nil {
		return d.err
	}
	if kids := bits.OnesCount16(v.Used); v.Kind == Branch && (kids == 0 || (kids == 1 && !v.HasValue())) {
		// Such a branch is never stored: it collapses into its only child or value.
		return &CorruptError{Offset: 0, Reason: fmt.Sprintf("branch with %d children and value=%v", kids, v.HasValue())}
	}
	return nil
}

// piece returns the bytes appended to d.buf since mark, capped at their length.
func (d *decoder) piece(mark int) []byte {
	return d.buf[mark:len(d.buf):len(d.buf)]
}

func (d *decoder) payload(v *Vertex, acc *Account) {
	switch v.Payload {
	case RawPayload:
		n := d.uvarint()
		if n == 0 && d.err == nil {
			d.fail("empty raw value")
		}
		if s := d.take(int(min(n, uint64(len(d.b))+1))); s != nil {
			mark := len(d.buf)
			d.buf = append(d.buf, s...)
			v.Value = d.piece(mark)
		}
	case SlotPayload:
		s := d.sbe(32)
		if len(s) == 0 && d.err == nil {
			d.fail("zero storage slot")
		}
		mark := len(d.buf)
		d.buf = append(d.buf, s...)
		v.Value = d.piece(mark)
	case AccountPayload:
		a := acc
		a.CodeHash = hashkey.EmptyCodeHash
		v.Acc = a
		m := d.take(1)
		if m == nil {
			return
		}
		mask := m[0]
		if mask&0xe0 != 0 {
			d.fail("account mask has reserved bits set")
		}
		if mask&accRootKey != 0 && mask&accStorage == 0 {
			d.fail("account storage root flagged without a storage ID")
		}
		if mask&accNonce != 0 {
			if a.Nonce = d.uint64(); a.Nonce == 0 {
				d.fail("account nonce flagged but zero")
			}
		}
		if mask&accBalance != 0 {
			s := d.sbe(32)
			if len(s) == 0 {
				d.fail("account balance flagged but zero")
			}
			a.Balance.SetBytes(s)
		}
		if mask&accCode != 0 {
			if c := d.take(32); c != nil {
				copy(a.CodeHash[:], c)
				if a.CodeHash == hashkey.EmptyCodeHash {
					d.fail("account code hash flagged but empty")
				}
			}
		}
		if mask&accStorage != 0 {
			if a.Storage = ID(d.uint64()); a.Storage == NoID {
				d.fail("account storage ID flagged but zero")
			}
		}
		if mask&accRootKey != 0 {
			if k := d.take(32); k != nil {
				copy(a.StorageKey[:], k)
				if a.StorageKey == (hashkey.Hash{}) {
					d.fail("account storage root flagged but zero")
				}
			}
		}
	}
}
