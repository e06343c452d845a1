// Package vertex defines hexstate's unit of storage: a trie vertex addressed by
// a 64-bit ID, and its binary record.
//
// A Vertex is a leaf (the rest of its key's path and a payload) or a branch (up
// to 16 children in a 16-bit bitmap, and a fused extension path); there is no
// extension vertex. Payloads are raw bytes (generic tries), an Account (whose
// storage root is not stored: Storage names the root vertex of its storage
// trie) or a slot value. A branch may carry its own hash key and, packed as
// ChildKeys, its children's keys as of its last hash, so that re-hashing it
// after a change below one child does not need the other children.
//
// IDs come from an Allocator, a single counter whose IDs are never reused. How
// a branch names its children is the Format: in FormatV2 a new branch takes
// BranchSlots (16) consecutive IDs and stores only the first (Base), child n
// being Base+n, so siblings are adjacent keys in the store; in FormatV1 a
// branch stores one ID per child (Kids).
//
// Encode and Decode are the record codec (docs/format.md §4): Decode accepts
// exactly what Encode produces and reports anything else as a *CorruptError. A
// Batch is one atomic write of records, deletions and the admin record, and
// ReadStats counts what a store served. The package holds data and codecs
// only; trie operations are in package trie.
package vertex
