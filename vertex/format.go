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
