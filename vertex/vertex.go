package vertex

import (
	"github.com/hexstate/hexstate/hashkey"
	"github.com/holiman/uint256"
)

// Kind tells a leaf from a branch. There is no extension kind: an extension is
// fused into the branch below it as the branch's Path.
type Kind uint8

const (
	// Leaf holds the rest of a key's path and its payload.
	Leaf Kind = 1
	// Branch has up to 16 children and, in a generic trie, a value of its own (for a
	// key that ends here). Its Path, when not empty, is the fused extension above it.
	Branch Kind = 2
)

// PayloadKind tells what a leaf (or a branch's value) holds.
type PayloadKind uint8

const (
	NoPayload      PayloadKind = 0 // a branch without a value
	RawPayload     PayloadKind = 1 // arbitrary non-empty bytes (generic tries)
	AccountPayload PayloadKind = 2 // an Account (state trie)
	SlotPayload    PayloadKind = 3 // a storage slot: Value holds its minimal big-endian bytes
)

// Account is the payload of an account leaf. Its storage root is the hash key
// of the storage trie rooted at Storage (NoID: no storage).
type Account struct {
	Nonce    uint64
	Balance  uint256.Int
	CodeHash hashkey.Hash
	Storage  ID
	// StorageKey, when not zero, is that storage root as the same version of
	// the state holds it, kept in the leaf so that hashing the leaf reads no
	// storage-trie vertex (docs/format.md §4.7). Zero means not recorded: the
	// root is the key of the vertex Storage names. A writer that changes the
	// storage trie clears it; it is stored only with a Storage ID.
	StorageKey hashkey.Hash
}

// Vertex is one node of the trie, with exactly the fields its record stores
// (Encode, Decode). What only memory knows about a vertex (which of a
// branch's children changed since it was hashed) is the trie package's.
type Vertex struct {
	// The fields a walk or a parent's re-hash touches come first: they fill
	// the struct's first 64 bytes, one cache line when the vertex starts on a
	// line boundary, rather than being spread over the whole struct.
	Key     hashkey.Key // hash key when known; void means "recompute"
	Kind    Kind
	Payload PayloadKind
	Used    uint16   // branch: bit n set when child n exists
	Path    []byte   // nibbles: a leaf's remaining path, a branch's fused extension
	Base    ID       // branch, format v2: child n is Base+n
	Kids    *[16]ID  // branch, format v1: child IDs (nil in v2)
	Value   []byte   // RawPayload bytes, or a slot's minimal big-endian value
	Acc     *Account // AccountPayload

	// ChildKeys holds a branch's children's keys as of its last hash, so
	// re-hashing it after a write below one child reads only that child and
	// not its 15 siblings. Encode stores them with the branch's own key. The
	// array is never changed in place once built; nil means unknown (a record
	// written without them): every child is read.
	ChildKeys ChildKeys
}

// Child returns the ID of child n of a branch, or NoID when slot n is unused.
func (v *Vertex) Child(n int) ID {
	if v.Used&(1<<n) == 0 {
		return NoID
	}
	if v.Kids != nil {
		return v.Kids[n]
	}
	return v.Base + ID(n)
}

// HasValue reports whether v carries a payload (always true for a leaf).
func (v *Vertex) HasValue() bool { return v.Payload != NoPayload }
