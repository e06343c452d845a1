package vertex

import "fmt"

// Format is an on-disk layout version. It decides how a branch records where its
// children live and how IDs are allocated.
type Format uint8

const (
	// FormatV1 is the legacy layout: a branch stores one ID per present child, each
	// allocated when the child is first needed, so siblings scatter over the ID space.
	FormatV1 Format = 1
	// FormatV2 is the default layout: a branch pre-allocates 16 consecutive IDs and
	// stores only the first (its base) and a 16-bit bitmap of used slots; child n
	// lives at base+n, so siblings are adjacent keys in the store.
	FormatV2 Format = 2
)

// Latest is the format new databases are created in.
const Latest = FormatV2

// Valid reports whether f is a format this build reads and writes.
func (f Format) Valid() bool { return f == FormatV1 || f == FormatV2 }

// String returns "v1", "v2", or "v?N" for an unknown format.
func (f Format) String() string {
	if f.Valid() {
		return fmt.Sprintf("v%d", uint8(f))
	}
	return fmt.Sprintf("v?%d", uint8(f))
}

// Records is a record variant: whether a branch record carries copies of its
// children's hash keys besides its own key (docs/format.md §4.5). It is
// independent of the layout (Format): both layouts have both variants, and
// records of either variant decode whatever variant a database writes.
type Records uint8

const (
	// KeysOnce stores every hash key once: a branch record holds its own key
	// and none of its children's, so re-hashing a branch read from the store
	// reads its children (one range read over its 16 slots in format v2).
	KeysOnce Records = 1
	// ChildKeyCopies stores with a branch's own key copies of its children's
	// keys, so re-hashing it reads no sibling; records are larger (every branch
	// key is stored twice). It was the only variant written before the admin
	// record named one.
	ChildKeyCopies Records = 2
)

// DefaultRecords is the variant new databases are created with.
const DefaultRecords = KeysOnce

// Valid reports whether r is a variant this build reads and writes.
func (r Records) Valid() bool { return r == KeysOnce || r == ChildKeyCopies }

// String returns "keys-once", "child-key-copies", or "records?N" for an
// unknown variant.
func (r Records) String() string {
	switch r {
	case KeysOnce:
		return "keys-once"
	case ChildKeyCopies:
		return "child-key-copies"
	}
	return fmt.Sprintf("records?%d", uint8(r))
}

// ParseRecords returns the variant whose String is s; the empty string gives
// 0 (no choice: a database's default). Any other string is an error.
func ParseRecords(s string) (Records, error) {
	for _, r := range []Records{KeysOnce, ChildKeyCopies} {
		if s == r.String() {
			return r, nil
		}
	}
	if s == "" {
		return 0, nil
	}
	return 0, fmt.Errorf("unknown record variant %q (want %v or %v)", s, KeysOnce, ChildKeyCopies)
}
