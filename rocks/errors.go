package rocks

import (
	"errors"
	"fmt"
)

// Sentinel errors. Open wraps the ones about what it found at the path in an
// *OpenError, so both errors.Is(err, ErrX) and errors.As(err, &openErr) work.
var (
	// ErrNotDirectory: the path given to Open exists and is not a directory.
	// Open touched nothing.
	ErrNotDirectory = errors.New("rocks: path is not a directory")

	// ErrNotRocksDB: the directory is not empty and holds no RocksDB database
	// (no CURRENT file), or RocksDB cannot read the one it holds. Open wrote
	// nothing in it.
	ErrNotRocksDB = errors.New("rocks: directory holds no readable RocksDB database")

	// ErrForeignDB: the directory holds a RocksDB database that hexstate did not
	// create (no hexstate marker, or other column families). Open wrote nothing
	// in it.
	ErrForeignDB = errors.New("rocks: RocksDB database is not a hexstate store")

	// ErrStoreVersion: the database is a hexstate store of a layout version this
	// build does not know (written by a newer hexstate). Open wrote nothing.
	ErrStoreVersion = errors.New("rocks: unsupported hexstate store layout version")

	// ErrLocked: the database is already open in another process or in another
	// Store of this process (RocksDB's LOCK file is held).
	ErrLocked = errors.New("rocks: database is locked by another process or Store")

	// ErrNoDatabase: a read-only Open found no store to open (a missing or
	// empty directory, or a creation cut short). Read-only opens never create
	// or complete one.
	ErrNoDatabase = errors.New("rocks: no database to open read-only")

	// ErrClosed is returned by every Store method called after Close (except
	// Close itself, which returns nil).
	ErrClosed = errors.New("rocks: store is closed")

	// ErrReadOnly is returned by Write and Compact on a store opened with
	// Options.ReadOnly.
	ErrReadOnly = errors.New("rocks: store is opened read-only")

	// ErrStatisticsDisabled is returned by BlockStats and Statistics when the
	// store was opened without Options.Statistics.
	ErrStatisticsDisabled = errors.New("rocks: RocksDB statistics are disabled (set Options.Statistics)")

	// ErrCorruptKey: a key in the vertices column family is not 8 bytes long.
	ErrCorruptKey = errors.New("rocks: malformed vertex key")
)

// OpenError is what Open returns when the path does not hold a store it may
// open. Kind is one of the sentinels above (ErrNotDirectory, ErrNotRocksDB,
// ErrForeignDB, ErrStoreVersion, ErrLocked, ErrNoDatabase); Found says what was
// at Path, Hint what to do about it, and Cause is the underlying error, if any.
// errors.Is matches both Kind and Cause.
type OpenError struct {
	Path  string // absolute path given to Open
	Kind  error  // the sentinel: ErrNotDirectory, ErrNotRocksDB, ...
	Found string // what Open found at Path, for people
	Hint  string // what to do about it, for people
	Cause error  // the underlying error (from the OS or RocksDB), or nil
}

// Error reports the path, what was found there and what to do.
func (e *OpenError) Error() string {
	s := fmt.Sprintf("rocks: cannot open %q: %s", e.Path, e.Found)
	if e.Cause != nil {
		s += " (" + e.Cause.Error() + ")"
	}
	if e.Hint != "" {
		s += "; " + e.Hint
	}
	return s
}

// Unwrap returns Kind and Cause, for errors.Is and errors.As.
func (e *OpenError) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Cause}
}

func openErr(path string, kind error, found, hint string, cause error) *OpenError {
	return &OpenError{Path: path, Kind: kind, Found: found, Hint: hint, Cause: cause}
}
