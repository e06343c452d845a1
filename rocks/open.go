package rocks

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/linxGnu/grocksdb"
)

// openMode is what Open found at the path and so how it opens it.
type openMode int

const (
	modeCreate openMode = iota // missing or empty directory: create a store
	modeFinish                 // our column families, no marker, no data: a creation cut short
	modeOpen                   // an existing hexstate store
)

// Open opens the hexstate store in dir, creating it (and dir with its parents)
// when dir is missing or an empty directory. opts may be nil for the defaults.
//
// Open never writes anything in a path that does not already hold a hexstate
// store: a regular file is ErrNotDirectory, a non-empty directory without a
// RocksDB database is ErrNotRocksDB, a RocksDB database without hexstate's
// marker or column families is ErrForeignDB, a store of an unknown layout is
// ErrStoreVersion. A store open elsewhere is ErrLocked. These come wrapped in an
// *OpenError that says what was found and what to do.
//
// Open does not look inside the admin record: checking the trie format version
// is the caller's job.
func Open(dir string, opts *Options) (*Store, error) {
	o := opts.withDefaults()
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("rocks: open %q: %w", dir, err)
	}
	mode, err := inspect(abs, o.ReadOnly)
	if err != nil {
		return nil, err
	}
	return openDB(abs, o, mode)
}

// inspect decides how to open dir without writing into it (except creating it
// when missing and not read-only).
func inspect(dir string, readOnly bool) (openMode, error) {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if readOnly {
			return 0, openErr(dir, ErrNoDatabase, "no such directory",
				"a read-only open needs an existing hexstate store", nil)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return 0, fmt.Errorf("rocks: create directory %q: %w", dir, err)
		}
		return modeCreate, nil
	case err != nil:
		return 0, fmt.Errorf("rocks: open %q: %w", dir, err)
	case !fi.IsDir():
		return 0, openErr(dir, ErrNotDirectory, describeNonDir(fi),
			"pass the path of a directory: a missing or empty one gets a new store", nil)
	}

	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("rocks: open %q: %w", dir, err)
	}
	if len(entries) == 0 {
		if readOnly {
			return 0, openErr(dir, ErrNoDatabase, "an empty directory",
				"a read-only open needs an existing hexstate store", nil)
		}
		return modeCreate, nil
	}
	if !slices.ContainsFunc(entries, func(e fs.DirEntry) bool { return e.Name() == "CURRENT" }) {
		if creationLeftovers(entries) {
			// RocksDB was killed while creating the database, before it wrote
			// CURRENT: nothing was committed, and RocksDB creates it anew.
			if readOnly {
				return 0, openErr(dir, ErrNoDatabase,
					fmt.Sprintf("the files of a RocksDB creation cut short before CURRENT was written (%s)", sampleNames(entries)),
					"open it read-write once to create the store", nil)
			}
			return modeCreate, nil
		}
		return 0, openErr(dir, ErrNotRocksDB,
			fmt.Sprintf("a non-empty directory without a RocksDB CURRENT file (%s)", sampleNames(entries)),
			"pass a missing or empty directory to create a store, or the directory of an existing one", nil)
	}

	lo := grocksdb.NewDefaultOptions()
	cfs, err := grocksdb.ListColumnFamilies(lo, dir)
	lo.Destroy()
	if err != nil {
		return 0, openErr(dir, ErrNotRocksDB, "a CURRENT file, but RocksDB cannot read the database",
			"check that the directory is an intact hexstate store", err)
	}
	// Only the default column family: maybe a creation killed before RocksDB
	// created "vertices"; it is one if the database is empty (checked below).
	onlyDefault := len(cfs) == 1 && cfs[0] == cfDefault
	foreignCFs := openErr(dir, ErrForeignDB,
		fmt.Sprintf("a RocksDB database with column families %q, not hexstate's %q", cfs, cfNames),
		"this is not a hexstate store (it was left unchanged); pass another directory", nil)
	if !sameSet(cfs, cfNames) && !sameSet(cfs, cfNamesNoLeaves) && !onlyDefault {
		return 0, foreignCFs
	}

	marker, empty, err := probe(dir, cfs)
	if err != nil {
		return 0, openErr(dir, ErrNotRocksDB, "a RocksDB database that cannot be opened read-only",
			"check that the directory is an intact hexstate store", err)
	}
	if onlyDefault && (marker != nil || !empty) {
		return 0, foreignCFs
	}
	if marker == nil {
		if empty && !readOnly {
			return modeFinish, nil
		}
		if empty {
			return 0, openErr(dir, ErrNoDatabase,
				"an empty database with hexstate's column families but no marker (a creation cut short)",
				"open it read-write once to finish creating the store", nil)
		}
		return 0, openErr(dir, ErrForeignDB,
			fmt.Sprintf("a RocksDB database with hexstate's column families but no %q marker", markerKey),
			"this is not a hexstate store (it was left unchanged); pass another directory", nil)
	}
	version, ok := parseMarker(marker)
	if !ok {
		return 0, openErr(dir, ErrForeignDB,
			fmt.Sprintf("a RocksDB database whose %q key holds %x, not a hexstate marker", markerKey, marker),
			"this is not a hexstate store (it was left unchanged); pass another directory", nil)
	}
	if version != storeVersion {
		return 0, openErr(dir, ErrStoreVersion,
			fmt.Sprintf("a hexstate store of layout version %d; this build reads version %d", version, storeVersion),
			"open it with the hexstate release that wrote it", nil)
	}
	return modeOpen, nil
}

// probe opens dir read-only with column families names (the default one among
// them), with its info log sent to a temporary directory so nothing is written
// into dir, and returns the marker (nil when absent) and whether every column
// family is empty.
func probe(dir string, names []string) (marker []byte, empty bool, err error) {
	logDir, err := os.MkdirTemp("", "hexstate-rocks-probe-")
	if err != nil {
		return nil, false, err
	}
	defer os.RemoveAll(logDir)

	o := grocksdb.NewDefaultOptions()
	defer o.Destroy()
	o.SetDbLogDir(logDir)
	o.SetMaxOpenFiles(16) // do not open every SST file up front
	o.SetSkipStatsUpdateOnDBOpen(true)
	cfOpts := make([]*grocksdb.Options, len(names))
	for i := range cfOpts {
		cfOpts[i] = o
	}
	db, cfs, err := grocksdb.OpenDbForReadOnlyColumnFamilies(o, dir, names, cfOpts, false)
	if err != nil {
		return nil, false, err
	}
	defer func() {
		for _, cf := range cfs {
			cf.Destroy()
		}
		db.Close()
	}()

	ro := grocksdb.NewDefaultReadOptions()
	defer ro.Destroy()
	ro.SetFillCache(false)
	v, err := db.GetCF(ro, cfs[slices.Index(names, cfDefault)], markerKey)
	if err != nil {
		return nil, false, err
	}
	if v.Exists() {
		marker = append([]byte(nil), v.Data()...)
	}
	v.Free()

	empty = true
	for _, cf := range cfs {
		it := db.NewIteratorCF(ro, cf)
		it.SeekToFirst()
		if it.Valid() {
			empty = false
		}
		err = it.Err()
		it.Close()
		if err != nil {
			return nil, false, err
		}
	}
	return marker, empty, nil
}

// openDB opens (or creates) the database once inspect has cleared it.
func openDB(dir string, o Options, mode openMode) (*Store, error) {
	create := mode != modeOpen
	native := o.build(create)
	// A last log record cut short by a crash is dropped; damage anywhere else
	// fails the open (see wal.go).
	native.db.SetWALRecoveryMode(grocksdb.TolerateCorruptedTailRecordsRecovery)
	names, err := storeCFs(dir, create, o.ReadOnly, native)
	if err != nil {
		native.destroy()
		return nil, err
	}
	db, cfs, err := openNative(dir, o.ReadOnly, native, names)
	var damage *WALDamage
	if isCorruption(err) && !create {
		if damage = probeWAL(dir, err); damage != nil {
			if !o.SalvageWAL {
				native.destroy()
				oe := openErr(dir, ErrWALCorrupt,
					fmt.Sprintf("a store whose write-ahead log (%s) is damaged before its end; recovery would stop at sequence number %d and drop the intact writes after it",
						strings.Join(damage.Logs, ", "), damage.Sequence),
					"the log was left as it is; to accept the loss and continue from the last intact write, open the store with Options.SalvageWAL (OpenError.WAL.Admin is the admin record it would keep), or restore the store from a backup",
					err)
				oe.WAL = damage
				return nil, oe
			}
			native.db.SetWALRecoveryMode(grocksdb.PointInTimeRecovery)
			db, cfs, err = openNative(dir, o.ReadOnly, native, names)
		}
	}
	if err != nil {
		native.destroy()
		if isLockError(err) {
			return nil, openErr(dir, ErrLocked, "a database whose LOCK file is held",
				"another process or Store has it open; close that first", err)
		}
		return nil, fmt.Errorf("rocks: open %q: %w", dir, err)
	}

	s := &Store{
		dir:      dir,
		opts:     o,
		readOnly: o.ReadOnly,
		db:       db,
		native:   native,
		cfAdmin:  cfs[0],
		cfVertex: cfs[1],
		cfLeaves: leavesHandle(cfs),
		ro:       grocksdb.NewDefaultReadOptions(),
		wo:       grocksdb.NewDefaultWriteOptions(),
		ranges:   rangePool{db: db, cf: cfs[1]},

		walDamage:   damage,
		ingestSplit: ingestFileBytes,
	}
	s.wo.SetSync(o.Sync)
	if !o.ReadOnly {
		s.space = newSpace(dir, uint64(max(o.ReserveBytes, 0)))
		if err := removeIngestLeftovers(dir); err != nil {
			s.Close()
			return nil, fmt.Errorf("rocks: remove unfinished batch files in %q: %w", dir, err)
		}
	}

	if create {
		// The marker is written, synced, right after RocksDB created the column
		// families; a crash in between leaves an empty store without marker,
		// which the next Open recognises (modeFinish) and completes.
		wo := grocksdb.NewDefaultWriteOptions()
		wo.SetSync(true)
		err := db.PutCF(wo, s.cfAdmin, markerKey, markerValue())
		wo.Destroy()
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("rocks: write hexstate marker in %q: %w", dir, err)
		}
	}
	return s, nil
}

// openNative opens the database in dir with the column families of a store.
func openNative(dir string, readOnly bool, native *nativeOptions, names []string) (*grocksdb.DB, []*grocksdb.ColumnFamilyHandle, error) {
	cfOpts := make([]*grocksdb.Options, len(names))
	for i := range cfOpts {
		cfOpts[i] = native.cfOptions(names[i])
	}
	if readOnly {
		return grocksdb.OpenDbForReadOnlyColumnFamilies(native.db, dir, names, cfOpts, false)
	}
	return grocksdb.OpenDbColumnFamilies(native.db, dir, names, cfOpts)
}

// leftoverName matches the files RocksDB writes while creating a database,
// before CURRENT: LOCK, IDENTITY, the info log, and the first MANIFEST and
// OPTIONS files (possibly still as temporary .dbtmp files). No data file (WAL
// or SST) is among them.
var leftoverName = regexp.MustCompile(`^(LOCK|IDENTITY|LOG|LOG\.old\.[0-9]+|[0-9]+\.dbtmp|MANIFEST-[0-9]+|OPTIONS-[0-9]+(\.dbtmp)?)$`)

// creationLeftovers reports whether entries (of a directory without CURRENT)
// are only what a RocksDB creation cut short leaves: regular files named as
// leftoverName allows. (RocksDB writes the info LOG first, so that alone can
// be all there is.)
func creationLeftovers(entries []fs.DirEntry) bool {
	for _, e := range entries {
		if !e.Type().IsRegular() || !leftoverName.MatchString(e.Name()) {
			return false
		}
	}
	return len(entries) > 0
}

// isLockError reports whether a RocksDB open error is about its LOCK file being
// held (by another process, or by this one: RocksDB tracks its own locks).
func isLockError(err error) bool {
	m := err.Error()
	return strings.Contains(m, "lock file") || strings.Contains(m, "lock hold by current process") ||
		strings.Contains(m, "/LOCK:")
}

func describeNonDir(fi fs.FileInfo) string {
	if fi.Mode().IsRegular() {
		return fmt.Sprintf("a regular file of %d bytes", fi.Size())
	}
	return fmt.Sprintf("a %s, not a directory", fi.Mode().Type())
}

// sampleNames lists up to three entry names and the total count.
func sampleNames(entries []fs.DirEntry) string {
	var names []string
	for _, e := range entries[:min(3, len(entries))] {
		names = append(names, e.Name())
	}
	s := fmt.Sprintf("%d entries: %s", len(entries), strings.Join(names, ", "))
	if len(entries) > 3 {
		s += ", ..."
	}
	return s
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			return false
		}
	}
	return true
}
