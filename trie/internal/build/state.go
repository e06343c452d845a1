package build

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/hexstate/hexstate/vertex"
)

// ErrState is wrapped by RestoreState's errors: the bytes are not a state
// AppendState made for a builder of this format.
var ErrState = errors.New("build: bad builder state")

// AppendState appends to dst what RestoreState needs to go on with this
// build in another process: the last key, the open branches (depth, record,
// children's keys so far) and the sub-trie not placed yet. The allocator's
// top is not in it (the caller saves it), nor are the vertices already
// emitted. Call it between two Adds.
//
//	state   = format u8 | has u8 | len(last) u8 | last… | count u8 | branch… | pending
//	branch  = depth u8 | used u16 | payload u8 | len u32 | value…
//	          | a u64 ID per used slot (v1)
//	          | children's keys (vertex.ChildKeys: used u16, len u8 and key per used slot)
//	          | the held child's record per used slot (v2: len u32 | vertex.Encode)
//	pending = 0 (nothing) | 1 branch | 2 len u32 | leaf record (vertex.Encode) | storage root 32
func (b *Builder) AppendState(dst []byte) []byte {
	dst = append(dst, byte(b.format), boolByte(b.has), byte(len(b.last)))
	dst = append(dst, b.last...)
	dst = append(dst, byte(len(b.stack)))
	for _, ob := range b.stack {
		dst = appendBranch(dst, ob)
	}
	switch {
	case !b.has:
		dst = append(dst, 0)
	case b.pend.branch != nil:
		dst = append(dst, 1)
		dst = appendBranch(dst, b.pend.branch)
	default:
		dst = append(dst, 2)
		dst = appendRecord(dst, &b.pend.leaf)
		dst = append(dst, b.pend.root[:]...)
	}
	return dst
}

func appendBranch(dst []byte, ob *openBranch) []byte {
	dst = append(dst, byte(ob.depth))
	dst = binary.BigEndian.AppendUint16(dst, ob.v.Used)
	dst = append(dst, byte(ob.v.Payload))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(ob.v.Value)))
	dst = append(dst, ob.v.Value...)
	if ob.v.Kids != nil {
		for n := 0; n < 16; n++ {
			if ob.v.Used&(1<<n) != 0 {
				dst = binary.BigEndian.AppendUint64(dst, uint64(ob.ids[n]))
			}
		}
	}
	dst = vertex.PackChildKeys(dst, ob.v.Used, &ob.kids)
	if ob.v.Kids == nil {
		for n := 0; n < 16; n++ {
			if ob.v.Used&(1<<n) != 0 {
				dst = appendRecord(dst, &ob.held[n].v)
			}
		}
	}
	return dst
}

func appendRecord(dst []byte, v *vertex.Vertex) []byte {
	rec := vertex.Encode(nil, v)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(rec)))
	return append(dst, rec...)
}

func boolByte(x bool) byte {
	if x {
		return 1
	}
	return 0
}

// RestoreState puts the builder, which Reset readied for the same trie as the
// one AppendState saved, into the saved state, and returns what follows it in
// src. Anything but a state of a builder of this format is an error wrapping
// ErrState.
func (b *Builder) RestoreState(src []byte) ([]byte, error) {
	r := stateReader{b: src}
	if vertex.Format(r.byte()) != b.format {
		r.fail("a state of another format")
	}
	b.has = r.byte() == 1
	b.last = append(b.last[:0], r.take(int(r.byte()))...)
	n := int(r.byte())
	b.stack = b.stack[:0]
	for i := 0; i < n && r.err == nil; i++ {
		b.stack = append(b.stack, b.readBranch(&r))
	}
	b.pend = pendingTrie{}
	switch r.byte() {
	case 0:
		if b.has {
			r.fail("a build without a pending sub-trie")
		}
	case 1:
		b.pend.branch = b.readBranch(&r)
	case 2:
		v := b.readRecord(&r, vertex.Leaf)
		copy(b.pend.root[:], r.take(32))
		if v != nil {
			b.pend.leaf = vertex.Vertex{Kind: vertex.Leaf, Payload: v.Payload, Value: v.Value}
			if v.Acc != nil {
				b.pend.account = *v.Acc
				b.pend.leaf.Acc = &b.pend.account
			}
		}
	default:
		r.fail("unknown pending kind")
	}
	for i, ob := range b.stack { // depths strictly increase, within the last key
		if ob.depth >= len(b.last) || (i > 0 && ob.depth <= b.stack[i-1].depth) {
			r.fail("open branches out of order")
		}
	}
	if r.err != nil {
		b.stack, b.has = b.stack[:0], false
		return nil, r.err
	}
	return r.b, nil
}

func (b *Builder) readBranch(r *stateReader) *openBranch {
	ob := new(openBranch)
	ob.depth = int(r.byte())
	used := r.uint16()
	ob.v = vertex.Vertex{Kind: vertex.Branch, Used: used, Payload: vertex.PayloadKind(r.byte())}
	ob.value = append(ob.value, r.take(int(r.uint32()))...)
	ob.v.Value = ob.value
	if b.format == vertex.FormatV1 {
		for n := 0; n < 16; n++ {
			if used&(1<<n) != 0 {
				ob.ids[n] = vertex.ID(r.uint64())
			}
		}
		ob.v.Kids = &ob.ids
	}
	// The children's keys: a length byte and the key for each used slot.
	ck := vertex.ChildKeys(binary.BigEndian.AppendUint16(nil, r.uint16()))
	for n := 0; n < 16 && r.err == nil; n++ {
		if used&(1<<n) != 0 {
			l := int(r.byte())
			if l == 0 || l > 32 {
				r.fail("a child key's length")
			}
			ck = append(append(ck, byte(l)), r.take(l)...)
		}
	}
	if r.err == nil && ck.Used() != used {
		r.fail("children's keys of other slots")
	}
	if r.err == nil {
		ck.Unpack(&ob.kids)
	}
	if b.format == vertex.FormatV2 {
		for n := 0; n < 16 && r.err == nil; n++ {
			if used&(1<<n) != 0 {
				if v := b.readRecord(r, 0); v != nil {
					ob.held[n].set(v)
				}
			}
		}
	}
	return ob
}

// readRecord reads a record of kind (0: either kind).
func (b *Builder) readRecord(r *stateReader, kind vertex.Kind) *vertex.Vertex {
	rec := r.take(int(r.uint32()))
	if r.err != nil {
		return nil
	}
	v, err := vertex.Decode(rec)
	if err == nil && kind != 0 && v.Kind != kind {
		err = errors.New("a record of the wrong kind")
	}
	if err != nil {
		r.fail(err.Error())
		return nil
	}
	return v
}

// stateReader reads a state, remembering the first failure.
type stateReader struct {
	b   []byte
	err error
}

func (r *stateReader) fail(why string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", ErrState, why)
	}
}

func (r *stateReader) take(n int) []byte {
	if r.err != nil || n > len(r.b) {
		r.fail("truncated")
		return nil
	}
	x := r.b[:n]
	r.b = r.b[n:]
	return x
}

func (r *stateReader) byte() byte {
	if x := r.take(1); x != nil {
		return x[0]
	}
	return 0
}

func (r *stateReader) uint64() uint64 {
	if x := r.take(8); x != nil {
		return binary.BigEndian.Uint64(x)
	}
	return 0
}

func (r *stateReader) uint16() uint16 {
	if x := r.take(2); x != nil {
		return binary.BigEndian.Uint16(x)
	}
	return 0
}

func (r *stateReader) uint32() uint32 {
	if x := r.take(4); x != nil {
		return binary.BigEndian.Uint32(x)
	}
	return 0
}
