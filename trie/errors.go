package trie

import (
	"errors"
	"fmt"

	"github.com/hexstate/hexstate/vertex"
)

var (
	// ErrStale is returned by a frame on a fork that a Persist abandoned, or whose
	// ancestor was rolled back.
	ErrStale = errors.New("trie: frame is stale (its fork was abandoned or rolled back)")
	// ErrClosed is returned after DB.Close.
	ErrClosed = errors.New("trie: database is closed")
	// ErrBadProof wraps every reason VerifyProof rejects a proof.
	ErrBadProof = errors.New("trie: invalid proof")
	// ErrCorruptAdmin is wrapped when the admin record cannot be decoded.
	ErrCorruptAdmin = errors.New("trie: corrupt admin record")
	// ErrMissingVertex is wrapped when a vertex the trie refers to is not in the store.
	ErrMissingVertex = errors.New("trie: missing vertex")
)

// FormatError is returned by Open for a database written in another format than
// the one requested (Found is what the admin record says), or when the requested
// format is one this build does not know (Found is then 0).
type FormatError struct {
	Found, Want vertex.Format
}

// Error says which format was found and requested and, for an older format, how
// to convert the database.
func (e *FormatError) Error() string {
	if !e.Want.Valid() {
		return fmt.Sprintf("trie: format %v requested; this build reads and writes %v and %v", e.Want, vertex.FormatV1, vertex.FormatV2)
	}
	if e.Found.Valid() && e.Found < vertex.Latest {
		return fmt.Sprintf("trie: database is in format %v, %v requested: run `trie-migrate -to %v <dir>` to convert it without a resync", e.Found, e.Want, e.Want)
	}
	return fmt.Sprintf("trie: database is in format %v, %v requested", e.Found, e.Want)
}

// RecordsError is returned by Open when the requested record variant
// (Options.Records) is one this build does not know (Found is then 0), when
// the admin record names a variant this build does not know (Found), or when
// the requested variant contradicts the one the admin record names.
type RecordsError struct {
	Found, Want vertex.Records
}

// Error says which variant was found and which was requested.
func (e *RecordsError) Error() string {
	if e.Found == 0 && !e.Want.Valid() {
		return fmt.Sprintf("trie: record variant %v requested; this build reads and writes %v and %v", e.Want, vertex.KeysOnce, vertex.ChildKeyCopies)
	}
	if !e.Found.Valid() {
		return fmt.Sprintf("trie: database has record variant %v, which this build does not know", e.Found)
	}
	return fmt.Sprintf("trie: database has %v records, %v requested (open with Options.Records 0 to follow the database, or convert it with trie-migrate)", e.Found, e.Want)
}

// vertexError wraps a vertex read or decode failure with the ID it concerns.
func vertexError(id vertex.ID, err error) error {
	return fmt.Errorf("trie: vertex %d: %w", id, err)
}

// maxDepth bounds every walk down a trie. Each step into a branch consumes at
// least one nibble of a key and an account leads into one storage trie, so a real
// trie is never deeper than its longest key's nibbles plus one storage trie; only a
// corrupt store with a reference cycle is, and the bound turns that from a stack
// overflow into an error.
const maxDepth = 1 << 14

var errTooDeep = &vertex.CorruptError{Reason: fmt.Sprintf("trie deeper than %d vertices: a reference cycle", maxDepth)}

// ErrSealed is returned when writing to a frame that has a child frame or was
// persisted; write to a new child frame instead.
var ErrSealed = errors.New("trie: frame is sealed (it has a child frame or was persisted)")

// ErrNilFrame is returned, wrapped with the call it concerns, when a nil *Frame
// (or a zero Frame not made by DB.Begin or Frame.Begin) is passed to
// DB.Persist or used as a receiver. Nothing is read or written.
var ErrNilFrame = errors.New("trie: nil frame (frames come from DB.Begin or Frame.Begin)")

// ErrForeignFrame is returned, wrapped, by DB.Persist for a frame begun on
// another database. Neither database changes.
var ErrForeignFrame = errors.New("trie: the frame belongs to another database")

// ErrBlockOrder is returned, wrapped with both block numbers, by DB.Persist
// for a block number not above the one the database is persisted at: block
// numbers only go forward (block 0, "before any block", may repeat). Nothing
// changes.
var ErrBlockOrder = errors.New("trie: block number not above the persisted block")

// ErrConcurrentWrite is returned, wrapped with the call it concerns, by a
// write to a frame (UpdateAccount, DeleteAccount, UpdateStorage, a bulk load,
// a Trie's Put and Delete) that another goroutine is using at the same
// time: writing one frame from several goroutines is a misuse, detected
// instead of corrupting the frame. The write changes nothing; the frame holds
// exactly the writes that succeeded.
var ErrConcurrentWrite = errors.New("trie: concurrent use of a frame by a write")

// ErrNoLeafIndex is returned by CopyLeafIndex when the source database has no
// complete leaf index to copy (BuildLeafIndex builds one from the trie).
var ErrNoLeafIndex = errors.New("trie: the source database has no complete leaf index")

// ErrLeafIndexMismatch is returned by CopyLeafIndex when the source's index
// does not describe the target's state: another block or root, or an entry
// that differs from the target trie's leaf.
var ErrLeafIndexMismatch = errors.New("trie: leaf index does not match the state")
