package hashkey

import "errors"

// Paths inside the trie are nibble sequences, one nibble (0..15) per byte.

// ErrHexPrefix is returned for a malformed hex-prefix encoding.
var ErrHexPrefix = errors.New("malformed hex-prefix path")

// HexPrefixSize is the encoded size of a path of n nibbles.
func HexPrefixSize(n int) int { return n/2 + 1 }

// AppendHexPrefix appends Ethereum's hex-prefix ("compact") encoding of nibbles: a
// flag nibble (2 for a leaf, +1 for odd length), a padding nibble for even lengths,
// then the nibbles packed two per byte.
func AppendHexPrefix(dst, nibbles []byte, leaf bool) []byte {
	flag := byte(0)
	if leaf {
		flag = 2
	}
	i := 0
	if len(nibbles)%2 == 1 {
		dst = append(dst, (flag+1)<<4|nibbles[0])
		i = 1
	} else {
		dst = append(dst, flag<<4)
	}
	for ; i < len(nibbles); i += 2 {
		dst = append(dst, nibbles[i]<<4|nibbles[i+1])
	}
	return dst
}

// DecodeHexPrefix appends the nibbles of the hex-prefix encoded hp to dst and
// reports the leaf flag. It rejects an empty input, flags above 3 and a non-zero
// padding nibble.
func DecodeHexPrefix(dst, hp []byte) (nibbles []byte, leaf bool, err error) {
	if len(hp) == 0 {
		return dst, false, ErrHexPrefix
	}
	flag := hp[0] >> 4
	if flag > 3 {
		return dst, false, ErrHexPrefix
	}
	leaf = flag&2 != 0
	if flag&1 == 1 {
		dst = append(dst, hp[0]&0x0f)
	} else if hp[0]&0x0f != 0 {
		return dst, false, ErrHexPrefix
	}
	for _, b := range hp[1:] {
		dst = append(dst, b>>4, b&0x0f)
	}
	return dst, leaf, nil
}

// AppendNibbles appends the nibbles of key (high nibble first) to dst.
func AppendNibbles(dst, key []byte) []byte {
	for _, b := range key {
		dst = append(dst, b>>4, b&0x0f)
	}
	return dst
}

// AppendPacked appends an even-length nibble sequence packed two per byte; it is
// the inverse of AppendNibbles. An odd trailing nibble is dropped.
func AppendPacked(dst, nibbles []byte) []byte {
	for i := 0; i+1 < len(nibbles); i += 2 {
		dst = append(dst, nibbles[i]<<4|nibbles[i+1])
	}
	return dst
}

// CommonPrefix returns the length of the common prefix of a and b (nibble
// paths, or any byte strings).
func CommonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
