package hashkey

import (
	"encoding/hex"
	"sync"

	"golang.org/x/crypto/sha3"
)

// Hash is a 32-byte keccak-256 digest.
type Hash [32]byte

// EmptyRoot is the root hash of an empty trie: keccak256(rlp("")).
var EmptyRoot = Hash{
	0x56, 0xe8, 0x1f, 0x17, 0x1b, 0xcc, 0x55, 0xa6, 0xff, 0x83, 0x45, 0xe6, 0x92, 0xc0, 0xf8, 0x6e,
	0x5b, 0x48, 0xe0, 0x1b, 0x99, 0x6c, 0xad, 0xc0, 0x01, 0x62, 0x2f, 0xb5, 0xe3, 0x63, 0xb4, 0x21,
}

// EmptyCodeHash is keccak256 of empty input, the code hash of an account without code.
var EmptyCodeHash = Hash{
	0xc5, 0xd2, 0x46, 0x01, 0x86, 0xf7, 0x23, 0x3c, 0x92, 0x7e, 0x7d, 0xb2, 0xdc, 0xc7, 0x03, 0xc0,
	0xe5, 0x00, 0xb6, 0x53, 0xca, 0x82, 0x27, 0x3b, 0x7b, 0xfa, 0xd8, 0x04, 0x5d, 0x85, 0xa4, 0x70,
}

// String returns the hash as 0x-prefixed lower-case hex.
func (h Hash) String() string { return "0x" + hex.EncodeToString(h[:]) }

// Bytes returns the hash as a new slice.
func (h Hash) Bytes() []byte { return append([]byte(nil), h[:]...) }

// keccakState is the part of x/crypto's legacy Keccak we use; Read squeezes without
// the copy Sum makes.
type keccakState interface {
	Write([]byte) (int, error)
	Read([]byte) (int, error)
	Reset()
}

// hasher is a pooled Keccak state with a scratch buffer. Input is copied into buf
// before it is written, so callers' slices never escape through the interface call
// and hashing allocates nothing.
type hasher struct {
	s   keccakState
	buf []byte
	out Hash
}

var hasherPool = sync.Pool{New: func() any {
	return &hasher{s: sha3.NewLegacyKeccak256().(keccakState), buf: make([]byte, 0, 600)}
}}

// Keccak256 returns the legacy (pre-NIST) Keccak-256 digest of the concatenated
// inputs, as Ethereum uses it. It allocates nothing: hasher states are pooled.
func Keccak256(data ...[]byte) (h Hash) {
	k := hasherPool.Get().(*hasher)
	k.buf = k.buf[:0]
	for _, d := range data {
		k.buf = append(k.buf, d...)
	}
	k.s.Reset()
	k.s.Write(k.buf)
	k.s.Read(k.out[:])
	h = k.out
	if cap(k.buf) <= 1<<16 { // do not pool a buffer a huge input grew
		hasherPool.Put(k)
	}
	return h
}

// Hasher is a Keccak-256 state for one goroutine's repeated use: cheaper than
// Keccak256 in a hot loop, with no pool round trip and no copy of the input. The
// zero value is not usable; NewHasher makes one. It is not safe for concurrent use.
type Hasher struct {
	s   keccakState
	out Hash
}

// NewHasher returns a ready Hasher.
func NewHasher() *Hasher { return &Hasher{s: sha3.NewLegacyKeccak256().(keccakState)} }

// Sum returns the legacy Keccak-256 digest of data.
func (h *Hasher) Sum(data []byte) Hash {
	h.s.Reset()
	h.s.Write(data)
	h.s.Read(h.out[:])
	return h.out
}

// KeyOf is the package's KeyOf, hashing with h.
func (h *Hasher) KeyOf(rlp []byte) Key {
	if len(rlp) < 32 {
		return KeyOf(rlp)
	}
	return Key{n: 32, b: h.Sum(rlp)}
}
