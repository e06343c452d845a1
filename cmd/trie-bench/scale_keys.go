package main

import (
	"encoding/binary"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/holiman/uint256"
)

// The scale workload (-mode scale) is never held in memory: every account,
// slot and block op is a pure function of (seed, index), computed when it is
// needed. Account i has an address (StateDB needs addresses), its key in the
// trie is keccak(address); contract storage slots have keys, hashed likewise.
// Only the build needs the accounts in hash order: see scale_index.go.

// Tags keep the streams of mix apart.
const (
	tagAddr uint64 = iota + 1
	tagNonce
	tagBalance
	tagCode
	tagTier
	tagSlotCount
	tagSlotKey
	tagSlotVal
	tagBlock
)

// mix is a deterministic 64-bit hash of its words (splitmix64 rounds).
func mix(words ...uint64) uint64 {
	h := uint64(0x9e3779b97f4a7c15)
	for _, w := range words {
		h ^= w
		h += 0x9e3779b97f4a7c15
		h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9
		h = (h ^ (h >> 27)) * 0x94d049bb133111eb
		h ^= h >> 31
	}
	return h
}

// fill32 writes 32 deterministic bytes drawn from words.
func fill32(dst []byte, words ...uint64) {
	w := append(words, 0)
	for k := range 4 {
		w[len(w)-1] = uint64(k)
		binary.BigEndian.PutUint64(dst[8*k:], mix(w...))
	}
}

// scaleShape is the shape of a scale state: accounts, one in ten a contract,
// contract sizes drawn from a mainnet-like skew (see slotCount).
type scaleShape struct {
	seed     uint64
	accounts int
}

// isContract reports whether account i is a contract (every tenth account).
func (s scaleShape) isContract(i int) bool { return i%10 == 0 }

// address returns account i's 20-byte address.
func (s scaleShape) address(i int) (a [20]byte) {
	var b [32]byte
	fill32(b[:], s.seed, tagAddr, uint64(i))
	copy(a[:], b[:20])
	return a
}

// addrHash returns keccak(address(i)), the account's key in the trie.
func (s scaleShape) addrHash(i int) hashkey.Hash {
	a := s.address(i)
	return hashkey.Keccak256(a[:])
}

// Contract tiers: 0.001% giants (100k-500k slots; contract 0 is always one),
// 0.1% large (1k-20k), 5% medium (50-500), the rest small (1-8). That is
// about 31 slots per contract on average, ~3.1 slots per account, with a
// third of all slots in the large contracts and a tenth in the giants.
const (
	tierSmall = iota
	tierMedium
	tierLarge
	tierGiant
)

// tier returns contract i's size class.
func (s scaleShape) tier(i int) int {
	if i == 0 {
		return tierGiant
	}
	switch r := mix(s.seed, tagTier, uint64(i)) % 100_000; {
	case r < 1:
		return tierGiant
	case r < 101:
		return tierLarge
	case r < 5101:
		return tierMedium
	}
	return tierSmall
}

// slotCount returns the number of slots contract i starts with (0 for an EOA).
func (s scaleShape) slotCount(i int) int {
	if !s.isContract(i) {
		return 0
	}
	r := mix(s.seed, tagSlotCount, uint64(i))
	switch s.tier(i) {
	case tierGiant:
		return 100_000 + int(r%400_001)
	case tierLarge:
		return 1_000 + int(r%19_001)
	case tierMedium:
		return 50 + int(r%451)
	}
	return 1 + int(r%8)
}

// slotKey returns the key of slot j of contract i (its trie key is its keccak).
func (s scaleShape) slotKey(i, j int) (k [32]byte) {
	fill32(k[:], s.seed, tagSlotKey, uint64(i), uint64(j))
	return k
}

// slotValue returns the initial value of slot j of contract i (never zero).
func (s scaleShape) slotValue(i, j int) uint256.Int {
	return nonZeroValue(mix(s.seed, tagSlotVal, uint64(i), uint64(j)))
}

// nonZeroValue turns r into a non-zero value: half small (< 2^16), half 1-32 bytes.
func nonZeroValue(r uint64) uint256.Int {
	var v uint256.Int
	if r&1 == 0 {
		v.SetUint64(1 + (r>>1)%(1<<16))
		return v
	}
	n := 1 + int((r>>1)%32)
	var b [32]byte
	fill32(b[:], r, 0x76616c)
	b[0] |= 1
	v.SetBytes(b[:n])
	return v
}

// account returns account i as built: a random nonce and non-zero balance; a
// contract has nonce 1 and a random code hash.
func (s scaleShape) account(i int) (nonce uint64, balance uint256.Int, code hashkey.Hash) {
	code = hashkey.EmptyCodeHash
	nonce = 1 + mix(s.seed, tagNonce, uint64(i))%1000
	if s.isContract(i) {
		nonce = 1
		fill32(code[:], s.seed, tagCode, uint64(i))
	}
	balance.SetUint64(1 + mix(s.seed, tagBalance, uint64(i))%(1<<62))
	return nonce, balance, code
}

// contracts returns the number of contracts (indices 0, 10, 20, ...).
func (s scaleShape) contracts() int { return (s.accounts + 9) / 10 }

// hotContracts returns the large and giant contracts, which get a share of
// each block's storage traffic (as the big token contracts do on mainnet).
func (s scaleShape) hotContracts() []int32 {
	var hot []int32
	for c := 0; c < s.accounts; c += 10 {
		if t := s.tier(c); t >= tierLarge {
			hot = append(hot, int32(c))
		}
	}
	return hot
}

// scaleSlot is one initial slot, by hash.
type scaleSlot struct {
	hash hashkey.Hash
	val  uint256.Int
}
