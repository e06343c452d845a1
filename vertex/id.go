package vertex

// ID addresses one vertex. ID 0 is never a vertex ("no vertex"); RootID is the root
// of the account trie (and of a standalone generic trie).
type ID uint64

const (
	// NoID is the zero ID: no vertex.
	NoID ID = 0
	// RootID is the fixed ID of the state (account) trie's root vertex.
	RootID ID = 1
	// FirstFreeID is the first ID an allocator hands out; IDs below it are reserved.
	FirstFreeID ID = 2
)
