package hashkey

import (
	"errors"
	"fmt"
)

// This file is a minimal, allocation-free RLP codec: the encoder appends to a caller's
// buffer, and the decoder (Split) is strict — it accepts only canonical encodings, as
// node hashes depend on every byte.

// Kind tells what an RLP item is.
type Kind uint8

const (
	String Kind = iota // a byte string
	List               // a list of items
)

// ErrRLP is wrapped by every RLP decoding error.
var ErrRLP = errors.New("malformed RLP")

func rlpErr(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrRLP}, a...)...)
}

// headerLen is the size of the header of an item whose payload is n bytes long
// (for a string of one byte below 0x80 the caller handles the header-less form).
func headerLen(n int) int {
	if n < 56 {
		return 1
	}
	return 1 + uintLen(uint64(n))
}

// uintLen is the number of bytes of v's minimal big-endian form (0 for v == 0).
func uintLen(v uint64) int {
	n := 0
	for ; v > 0; v >>= 8 {
		n++
	}
	return n
}

// StringSize is the encoded size of the RLP string s.
func StringSize(s []byte) int {
	if len(s) == 1 && s[0] < 0x80 {
		return 1
	}
	return headerLen(len(s)) + len(s)
}

// ListSize is the encoded size of a list whose items take payload bytes.
func ListSize(payload int) int { return headerLen(payload) + payload }

func appendHeader(dst []byte, base byte, n int) []byte {
	if n < 56 {
		return append(dst, base+byte(n))
	}
	l := uintLen(uint64(n))
	dst = append(dst, base+55+byte(l))
	for i := l - 1; i >= 0; i-- {
		dst = append(dst, byte(uint64(n)>>(8*i)))
	}
	return dst
}

// AppendString appends the RLP encoding of the byte string s.
func AppendString(dst, s []byte) []byte {
	if len(s) == 1 && s[0] < 0x80 {
		return append(dst, s[0])
	}
	return append(appendHeader(dst, 0x80, len(s)), s...)
}

// AppendUint64 appends the RLP encoding of v (its minimal big-endian bytes).
func AppendUint64(dst []byte, v uint64) []byte {
	if v == 0 {
		return append(dst, 0x80)
	}
	if v < 0x80 {
		return append(dst, byte(v))
	}
	l := uintLen(v)
	dst = append(dst, 0x80+byte(l))
	for i := l - 1; i >= 0; i-- {
		dst = append(dst, byte(v>>(8*i)))
	}
	return dst
}

// Uint64Size is the encoded size of AppendUint64(nil, v).
func Uint64Size(v uint64) int {
	if v < 0x80 {
		return 1
	}
	return 1 + uintLen(v)
}

// AppendListHeader appends the header of a list whose items take payload bytes;
// the caller appends the items after it.
func AppendListHeader(dst []byte, payload int) []byte { return appendHeader(dst, 0xc0, payload) }

// Split decodes the first item of b and returns its kind, its payload (the string's
// bytes or the list's encoded items) and the bytes after it. It rejects every
// non-canonical form: a single byte below 0x80 wrapped in a header, a long form for a
// payload under 56 bytes, a length with leading zeros, and a length past the input.
func Split(b []byte) (k Kind, content, rest []byte, err error) {
	if len(b) == 0 {
		return 0, nil, nil, rlpErr("empty input")
	}
	p := b[0]
	var hdr, n int
	switch {
	case p < 0x80:
		return String, b[:1], b[1:], nil
	case p < 0xb8:
		k, hdr, n = String, 1, int(p-0x80)
		if n == 1 && len(b) > 1 && b[1] < 0x80 {
			return 0, nil, nil, rlpErr("single byte 0x%02x below 0x80 must not have a header", b[1])
		}
	case p < 0xc0:
		k = String
		hdr, n, err = longLen(b, int(p-0xb7))
	case p < 0xf8:
		k, hdr, n = List, 1, int(p-0xc0)
	default:
		k = List
		hdr, n, err = longLen(b, int(p-0xf7))
	}
	if err != nil {
		return 0, nil, nil, err
	}
	if n > len(b)-hdr {
		return 0, nil, nil, rlpErr("item of %d bytes overruns %d bytes of input", n, len(b)-hdr)
	}
	return k, b[hdr : hdr+n], b[hdr+n:], nil
}

// longLen reads the length of a long-form header whose length field is ll bytes.
func longLen(b []byte, ll int) (hdr, n int, err error) {
	if len(b) < 1+ll {
		return 0, 0, rlpErr("truncated length")
	}
	if b[1] == 0 {
		return 0, 0, rlpErr("length with leading zero byte")
	}
	var v uint64
	for _, c := range b[1 : 1+ll] {
		v = v<<8 | uint64(c)
	}
	if ll > 8 || v > uint64(len(b)) {
		return 0, 0, rlpErr("length %d overruns input", v)
	}
	if v < 56 {
		return 0, 0, rlpErr("long form for a %d-byte payload", v)
	}
	return 1 + ll, int(v), nil
}

// SplitString is Split for an item that must be a string.
func SplitString(b []byte) (content, rest []byte, err error) {
	k, content, rest, err := Split(b)
	if err == nil && k != String {
		err = rlpErr("expected a string, found a list")
	}
	return content, rest, err
}

// SplitList is Split for an item that must be a list.
func SplitList(b []byte) (content, rest []byte, err error) {
	k, content, rest, err := Split(b)
	if err == nil && k != List {
		err = rlpErr("expected a list, found a string")
	}
	return content, rest, err
}

// CountItems returns how many items the encoded list payload b holds.
func CountItems(b []byte) (int, error) {
	n := 0
	for len(b) > 0 {
		_, _, rest, err := Split(b)
		if err != nil {
			return 0, err
		}
		b = rest
		n++
	}
	return n, nil
}
