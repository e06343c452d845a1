package trie

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/vertex"
)

// copyState is where an interrupted copy resumes: the target's allocator top,
// the records emitted, the records emitted but held back (loadWriter.hold:
// not written yet, so the state carries them), and the account trie's open
// branches (copyFrame).
//
//	"hxcp3" | format u8 | top u64 | records u64 | held | frames u8 | frame…
//	held  = count uvarint | (id u64 | len uvarint | record) for each
//	frame = src u64 | nib u8 | done u16
//	        | for each done bit: kid u64 (v1), or len uvarint | record (v2)
//	        | (len8 key) for each done bit
//
// (a v2 branch takes its slots when it is done, so the frame carries its
// finished children's records). A rebuild's state (copy_rebuild.go) has the
// same header and held records under its own magic, then where and how its
// build goes on:
//
//	"hxrb3" | format u8 | top u64 | records u64 | held | next account key 32 | builder state
//
// (the account builder's, build.Builder.AppendState). The states of earlier
// versions ("hxcp1", "hxcp2", "hxrb1", "hxrb2") took IDs in another order
// and are refused (ErrCopyVersion).
type copyState struct {
	format  vertex.Format
	top     vertex.ID
	records uint64
	held    []vertex.Record // emitted, not written: they go out with the commit
	frames  []copyFrame
	rebuild []byte // a rebuild's: the next account's key, then the builder's state
	scan    []byte // a scan's: the next source ID, then its stack (copy_scan.go)
}

var (
	copyStateMagic    = []byte("hxcp3")
	rebuildStateMagic = []byte("hxrb3")
	scanStateMagic    = []byte("hxsc1")
	// oldStateMagics are the magics of earlier versions' states.
	oldStateMagics = [][]byte{[]byte("hxcp1"), []byte("hxcp2"), []byte("hxrb1"), []byte("hxrb2")}
)

func (s *copyState) encode() []byte {
	magic := copyStateMagic
	switch {
	case s.rebuild != nil:
		magic = rebuildStateMagic
	case s.scan != nil:
		magic = scanStateMagic
	}
	b := append([]byte(nil), magic...)
	b = append(b, byte(s.format))
	b = binary.BigEndian.AppendUint64(b, uint64(s.top))
	b = binary.BigEndian.AppendUint64(b, s.records)
	b = binary.AppendUvarint(b, uint64(len(s.held)))
	for _, r := range s.held {
		b = binary.BigEndian.AppendUint64(b, uint64(r.ID))
		b = binary.AppendUvarint(b, uint64(len(r.Rec)))
		b = append(b, r.Rec...)
	}
	if s.rebuild != nil {
		return append(b, s.rebuild...)
	}
	if s.scan != nil {
		return append(b, s.scan...)
	}
	b = append(b, byte(len(s.frames)))
	for i := range s.frames {
		f := &s.frames[i]
		b = binary.BigEndian.AppendUint64(b, uint64(f.src))
		b = append(b, byte(f.nib))
		b = binary.BigEndian.AppendUint16(b, f.done)
		for n := 0; n < 16; n++ {
			switch {
			case f.done&(1<<n) == 0:
			case s.format == vertex.FormatV1:
				b = binary.BigEndian.AppendUint64(b, uint64(f.kids[n]))
			default:
				b = binary.AppendUvarint(b, uint64(len(f.recs[n])))
				b = append(b, f.recs[n]...)
			}
		}
		for n := 0; n < 16; n++ {
			if f.done&(1<<n) != 0 {
				b = append(b, byte(f.keys[n].Len()))
				b = append(b, f.keys[n].Bytes()...)
			}
		}
	}
	return b
}

// decodeCopyState parses a state encode made; anything else is an error
// wrapping ErrCopy.
func decodeCopyState(b []byte) (copyState, error) {
	var s copyState
	bad := func(why string) (copyState, error) {
		return copyState{}, fmt.Errorf("%w: resume state: %s", ErrCopy, why)
	}
	for _, m := range oldStateMagics {
		if bytes.HasPrefix(b, m) {
			return copyState{}, fmt.Errorf("%w: a state of version %q", ErrCopyVersion, m)
		}
	}
	rebuild := bytes.HasPrefix(b, rebuildStateMagic)
	scan := bytes.HasPrefix(b, scanStateMagic)
	if len(b) < len(copyStateMagic)+17 || (!rebuild && !scan && !bytes.HasPrefix(b, copyStateMagic)) {
		return bad("not a copy state")
	}
	b = b[len(copyStateMagic):]
	s.format = vertex.Format(b[0])
	s.top = vertex.ID(binary.BigEndian.Uint64(b[1:]))
	s.records = binary.BigEndian.Uint64(b[9:])
	b = b[17:]
	var err error
	if s.held, b, err = decodeHeld(b, s.top); err != nil {
		return bad(err.Error())
	}
	if rebuild { // checked by the rebuild that restores it
		if len(b) < 32 {
			return bad("truncated rebuild state")
		}
		s.rebuild = bytes.Clone(b)
		return s, nil
	}
	if scan { // parsed by decodeScanState
		s.scan = bytes.Clone(b)
		return s, nil
	}
	if len(b) < 1 {
		return bad("truncated frames")
	}
	nf := int(b[0])
	b = b[1:]
	if nf > maxCopyFrames {
		return bad("too many frames")
	}
	for i := 0; i < nf; i++ {
		if len(b) < 11 {
			return bad("truncated frame")
		}
		f := copyFrame{src: vertex.ID(binary.BigEndian.Uint64(b)), nib: int(b[8]), done: binary.BigEndian.Uint16(b[9:])}
		b = b[11:]
		if f.nib > 15 {
			return bad("frame nibble out of range")
		}
		if s.format == vertex.FormatV1 && len(b) < 8*bits.OnesCount16(f.done) {
			return bad("truncated frame")
		}
		for n := 0; n < 16; n++ {
			switch {
			case f.done&(1<<n) == 0:
			case s.format == vertex.FormatV1:
				f.kids[n] = vertex.ID(binary.BigEndian.Uint64(b))
				b = b[8:]
			default:
				l, k := binary.Uvarint(b)
				if k <= 0 || l == 0 || l > uint64(len(b)-k) {
					return bad("truncated frame record")
				}
				f.recs[n] = b[k : k+int(l) : k+int(l)]
				b = b[k+int(l):]
			}
		}
		for n := 0; n < 16; n++ {
			if f.done&(1<<n) == 0 {
				continue
			}
			if len(b) < 1 || len(b) < 1+int(b[0]) || b[0] > 32 {
				return bad("truncated key")
			}
			if b[0] > 0 {
				f.keys[n], _ = hashkey.KeyFromBytes(b[1 : 1+b[0]])
			}
			b = b[1+b[0]:]
		}
		s.frames = append(s.frames, f)
	}
	if len(b) != 0 {
		return bad("trailing bytes")
	}
	return s, nil
}

// decodeHeld decodes the held records of a copy state (referring to b) and
// returns what follows them. Every ID must lie below the state's allocator
// top.
func decodeHeld(b []byte, top vertex.ID) ([]vertex.Record, []byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, nil, fmt.Errorf("truncated held records")
	}
	b = b[k:]
	held := make([]vertex.Record, 0, n)
	for i := uint64(0); i < n; i++ {
		if len(b) < 8 {
			return nil, nil, fmt.Errorf("truncated held record")
		}
		id := vertex.ID(binary.BigEndian.Uint64(b))
		l, k := binary.Uvarint(b[8:])
		if k <= 0 || l > uint64(len(b)-8-k) {
			return nil, nil, fmt.Errorf("truncated held record")
		}
		if id == vertex.NoID || id >= top {
			return nil, nil, fmt.Errorf("held record of ID %d at or above the top %d", id, top)
		}
		end := 8 + k + int(l)
		held = append(held, vertex.Record{ID: id, Rec: b[8+k : end : end]})
		b = b[end:]
	}
	return held, b, nil
}
