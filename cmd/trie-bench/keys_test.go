package main

import (
	"math/rand/v2"
)

// keyBytes is the pool the alphabet of a sequence is drawn from: bytes whose
// nibbles collide in both halves (0x01/0x10/0x11, 0xf0/0x0f/0xff ...) plus the
// letters of the classic "do", "dog", "doge", "horse" trie.
var keyBytes = []byte{
	0x00, 0x01, 0x0f, 0x10, 0x11, 0x12, 0x1f, 0x21, 0x22, 0xf0, 0xf1, 0xff,
	'd', 'o', 'g', 'e', 'h', 'r', 's',
}

// keyGen draws keys of 1..40 bytes that share prefixes a lot, so that
// extensions, splits, collapses and values in branches all occur.
type keyGen struct {
	r        *rand.Rand
	alphabet []byte   // a few bytes of keyBytes
	prefixes [][]byte // shared prefixes built from the alphabet
	seen     [][]byte // every key returned so far
}

func newKeyGen(r *rand.Rand) *keyGen {
	g := &keyGen{r: r}
	perm := r.Perm(len(keyBytes))
	for _, i := range perm[:2+r.IntN(5)] {
		g.alphabet = append(g.alphabet, keyBytes[i])
	}
	for range 1 + r.IntN(6) {
		g.prefixes = append(g.prefixes, g.word(r.IntN(9)))
	}
	return g
}

// word returns n bytes drawn from the alphabet.
func (g *keyGen) word(n int) []byte {
	w := make([]byte, n)
	for i := range w {
		w[i] = g.alphabet[g.r.IntN(len(g.alphabet))]
	}
	return w
}

// length returns a key length in 1..40, biased towards short keys.
func (g *keyGen) length() int {
	switch g.r.IntN(4) {
	case 0, 1:
		return 1 + g.r.IntN(6)
	case 2:
		return 1 + g.r.IntN(16)
	default:
		return 1 + g.r.IntN(40)
	}
}

// key returns a fresh key (which may equal an earlier one).
func (g *keyGen) key() []byte {
	var k []byte
	switch n := g.r.IntN(10); {
	case n < 3 && len(g.seen) > 0:
		k = g.derive(g.seen[g.r.IntN(len(g.seen))])
	case n == 3:
		k = make([]byte, g.length())
		for i := range k {
			k[i] = byte(g.r.Uint32())
		}
	default:
		p := g.prefixes[g.r.IntN(len(g.prefixes))]
		k = append(append([]byte(nil), p...), g.word(g.length())...)
	}
	if len(k) == 0 {
		k = g.word(1)
	}
	if len(k) > 40 {
		k = k[:40]
	}
	g.seen = append(g.seen, k)
	return k
}

// derive returns a key close to k: a prefix of it, an extension of it, or k
// with one nibble of its last byte changed.
func (g *keyGen) derive(k []byte) []byte {
	k = append([]byte(nil), k...)
	switch g.r.IntN(3) {
	case 0:
		if len(k) > 1 {
			return k[:1+g.r.IntN(len(k)-1)]
		}
		return k
	case 1:
		return append(k, g.word(1+g.r.IntN(3))...)
	default:
		if g.r.IntN(2) == 0 {
			k[len(k)-1] ^= byte(1 + g.r.IntN(15)) // low nibble
		} else {
			k[len(k)-1] ^= byte(1+g.r.IntN(15)) << 4 // high nibble
		}
		return k
	}
}

// randValue returns a non-empty value of 1..100 bytes; about 40% are shorter
// than 9 bytes so that leaves get embedded in their parents.
func randValue(r *rand.Rand) []byte {
	var n int
	switch x := r.IntN(10); {
	case x < 4:
		n = 1 + r.IntN(8)
	case x < 7:
		n = 9 + r.IntN(32)
	default:
		n = 41 + r.IntN(60)
	}
	v := make([]byte, n)
	for i := range v {
		v[i] = byte(r.Uint32())
	}
	return v
}

// randBytes returns n random bytes.
func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}
