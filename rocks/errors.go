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

	// ErrNoSpace: a Write was refused, or failed, because the file system of
	// the store is (nearly) full. Write returns it wrapped in a *NoSpaceError.
	// When the free-space guard refused the write (NoSpaceError.Refused), RocksDB
	// never saw it: nothing was written, and the same Write succeeds once space
	// is freed. Otherwise the store stops writing until it is closed and opened
	// again (see NoSpaceError).
	ErrNoSpace = errors.New("rocks: no space left on the store's file system")

	// ErrWALCorrupt: the store's write-ahead log is damaged before its end (not
	// merely a last record cut short by a crash), so RocksDB could only recover
	// the writes before the damage and would silently drop intact later ones.
	// Open refuses such a store, wrapped in an *OpenError whose WAL field says
	// what would be kept, and leaves the damaged log as it is;
	// Options.SalvageWAL opens it anyway at the last intact write
	// (Store.WALDamage reports it).
	ErrWALCorrupt = errors.New("rocks: write-ahead log damaged before its end")
)

// OpenError is what Open returns when the path does not hold a store it may
// open. Kind is one of the sentinels above (ErrNotDirectory, ErrNotRocksDB,
// ErrForeignDB, ErrStoreVersion, ErrLocked, ErrNoDatabase, ErrWALCorrupt);
// Found says what was at Path, Hint what to do about it, and Cause is the
// underlying error, if any. errors.Is matches both Kind and Cause.
type OpenError struct {
	Path  string // absolute path given to Open
	Kind  error  // the sentinel: ErrNotDirectory, ErrNotRocksDB, ...
	Found string // what Open found at Path, for people
	Hint  string // what to do about it, for people
	Cause error  // the underlying error (from the OS or RocksDB), or nil
	// WAL describes the damage when Kind is ErrWALCorrupt (what a salvaging
	// open would keep, e.g. the admin record of the last intact write), else nil.
	WAL *WALDamage
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

// NoSpaceError is the error of a Write that the store's file system had no
// room for; errors.Is(err, ErrNoSpace) holds for it.
//
// Refused means the write was turned down before RocksDB's database saw it:
// by the free-space guard, or because the SST files of a large batch (see
// Options.IngestBytes) could not be built (Cause says why). Nothing was
// written and the store is healthy, so the same Write can be retried once
// space is freed. Otherwise RocksDB itself ran out of space (the
// guard was disabled, or something else filled the disk faster than the guard
// could see); the store then refuses every further Write with this error
// without calling RocksDB (whose write path must not be used after it failed
// on a full disk) and Close skips its final flush. The writes acknowledged
// before are in the write-ahead log: close the store, free space, and open it
// again.
type NoSpaceError struct {
	Dir     string // the store's directory
	Refused bool   // the write was turned down before RocksDB's database saw it
	Avail   uint64 // bytes available to the store when the guard refused the write (guard only)
	Need    uint64 // bytes the guard wanted available: the batch plus Options.ReserveBytes (guard only)
	Cause   error  // the error of RocksDB, or of building a batch's SST files
}

// Error says which store ran out of space, by how much, and what to do.
func (e *NoSpaceError) Error() string {
	if e.Refused && e.Cause != nil {
		return fmt.Sprintf("rocks: no space left on device for the store in %q to build a batch's files (%v); "+
			"nothing was written: free space and retry", e.Dir, e.Cause)
	}
	if e.Refused {
		return fmt.Sprintf("rocks: no space left on device for the store in %q: %d bytes available, a write needs %d "+
			"(the batch plus the reserve kept for RocksDB's flushes and compactions); nothing was written: free space and retry",
			e.Dir, e.Avail, e.Need)
	}
	return fmt.Sprintf("rocks: no space left on device for the store in %q (%v); it accepts no more writes: "+
		"free space, then close and reopen it (acknowledged writes are in its write-ahead log)", e.Dir, e.Cause)
}

// Unwrap returns ErrNoSpace and the cause, for errors.Is and errors.As.
func (e *NoSpaceError) Unwrap() []error {
	if e.Cause == nil {
		return []error{ErrNoSpace}
	}
	return []error{ErrNoSpace, e.Cause}
}
