package hashkey

import "encoding/hex"

// Key is how a parent node refers to a child in Ethereum's trie: keccak-256 of the
// child's RLP when that RLP is 32 bytes or longer, otherwise the RLP itself, which
// the parent embeds. The zero Key is "void": not computed, or no node.
type Key struct {
	n uint8 // 0 void, 1..31 embedded RLP, 32 hash
	b [32]byte
}

// KeyOf returns the Key of a node whose RLP encoding is rlp.
func KeyOf(rlp []byte) Key {
	var k Key
	if len(rlp) < 32 {
		k.n = uint8(copy(k.b[:], rlp))
		return k
	}
	k.b = Keccak256(rlp)
	k.n = 32
	return k
}

// HashKey returns the Key holding the hash h.
func HashKey(h Hash) Key { return Key{n: 32, b: h} }

// KeyFromBytes returns the Key whose stored bytes are b: a 32-byte hash, or the RLP
// of an embedded node (1 to 31 bytes). It reports false for any other length.
func KeyFromBytes(b []byte) (Key, bool) {
	if len(b) == 0 || len(b) > 32 {
		return Key{}, false
	}
	var k Key
	k.n = uint8(copy(k.b[:], b))
	return k, true
}

// IsVoid reports whether k holds nothing.
func (k *Key) IsVoid() bool { return k.n == 0 }

// IsHash reports whether k is a 32-byte hash (not an embedded node).
func (k *Key) IsHash() bool { return k.n == 32 }

// Len is the number of bytes k holds.
func (k *Key) Len() int { return int(k.n) }

// Bytes returns the hash or embedded RLP k holds; the slice aliases k.
func (k *Key) Bytes() []byte { return k.b[:k.n] }

// Hash returns the root hash of a trie whose root node has Key k: the key itself
// when it is a hash, keccak of the embedded RLP otherwise (a root is always
// hashed), and EmptyRoot for the void key.
func (k *Key) Hash() Hash {
	switch k.n {
	case 32:
		return k.b
	case 0:
		return EmptyRoot
	}
	return Keccak256(k.b[:k.n])
}

// String returns the key as 0x-prefixed hex.
func (k Key) String() string { return "0x" + hex.EncodeToString(k.b[:k.n]) }

// refSize is RefSize of the bytes k holds.
func (k *Key) refSize() int { return RefSize(k.b[:k.n]) }

// appendRef is AppendRef of the bytes k holds.
func (k *Key) appendRef(dst []byte) []byte { return AppendRef(dst, k.b[:k.n]) }

// RefSize is the size of a branch's reference to a child whose key is key, the
// bytes a Key holds (Key.Bytes): 1 for none, 33 for a hash, an embedded node's
// RLP as it is.
func RefSize(key []byte) int {
	switch len(key) {
	case 0:
		return 1
	case 32:
		return 33
	}
	return len(key)
}

// AppendRef appends a branch's reference to a child whose key is key (as in
// RefSize): a 32-byte string for a hash, the raw RLP of an embedded node, the
// empty string for no child.
func AppendRef(dst, key []byte) []byte {
	switch len(key) {
	case 0:
		return append(dst, 0x80)
	case 32:
		return append(append(dst, 0xa0), key...)
	}
	return append(dst, key...)
}
