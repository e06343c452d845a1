package rocks

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/hexstate/hexstate/vertex"
)

// The free-space guard. RocksDB 7.8 does not survive running out of space:
// once an append to the write-ahead log fails with ENOSPC the log writer is
// poisoned, and the next write or sync on it trips an assertion
// (writable_file_writer.h, "sync_without_flush_called_") that aborts the
// process in builds with assertions on, such as Debian's. And RocksDB's C API
// (hence grocksdb) offers no DB::Resume. So the store makes sure RocksDB never
// sees ENOSPC: before each Write it asks the file system (statfs) how much is
// available and refuses the write with a *NoSpaceError (ErrNoSpace) unless the
// batch still leaves Options.ReserveBytes for RocksDB's own background work
// (memtable flushes, compactions, new log and manifest files).
//
// Part of that reserve is held physically by a reserve file in the store
// directory (reserveName, ReserveBytes/reserveFraction bytes, allocated with
// fallocate), so that another program filling the disk cannot take all of it.
// The store deletes the reserve file when the guard refuses a write, when
// RocksDB reports a full disk anyway, and before the final flush of Close when
// the disk is nearly full, giving RocksDB's flushes and compactions room to
// finish; a later Write that finds space again creates it again.
const (
	// reserveName is the reserve file in the store directory. RocksDB ignores
	// files it does not know.
	reserveName = "HEXSTATE-RESERVE"
	// reserveFraction: the reserve file holds ReserveBytes/reserveFraction.
	reserveFraction = 4
	// recordOverhead approximates the bytes RocksDB adds per record in a write
	// batch and its log (tag, column family, varint lengths), rounded up.
	recordOverhead = 24
)

// space is the guard's state; it is used under Store.wmu (Write) or with
// Store.mu held exclusively (Close).
type space struct {
	dir     string
	reserve uint64 // Options.ReserveBytes; 0 disables the guard
	file    uint64 // the reserve file's full size
	have    uint64 // the reserve file's current size (0: absent)
	// failed holds RocksDB's out-of-space error once it has been seen: from
	// then on the store refuses writes without calling RocksDB, and Close does
	// not flush.
	failed error
}

// newSpace returns the guard of a writable store in dir, taking note of a
// reserve file left by an earlier run.
func newSpace(dir string, reserve uint64) *space {
	sp := &space{dir: dir, reserve: reserve, file: reserve / reserveFraction}
	if fi, err := os.Stat(sp.path()); err == nil && fi.Mode().IsRegular() {
		sp.have = uint64(fi.Size())
	}
	return sp
}

func (sp *space) path() string { return filepath.Join(sp.dir, reserveName) }

// avail returns the bytes of the store's file system available to it.
func (sp *space) avail() (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(sp.dir, &st); err != nil {
		return 0, fmt.Errorf("rocks: statfs %q: %w", sp.dir, err)
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// batchCost estimates the disk bytes a batch costs: its write-ahead-log record
// and, later, its share of a flushed SST file (counted at the same size,
// uncompressed, so the estimate is on the safe side).
func batchCost(b *vertex.Batch) uint64 {
	n := uint64(len(b.Admin)) + recordOverhead
	for _, r := range b.Puts {
		n += uint64(b.RecordSize(r.Rec)) + 8 + recordOverhead
	}
	n += uint64(len(b.Deletes)) * (8 + recordOverhead)
	for _, l := range b.Leaves {
		n += uint64(len(l.Key)+len(l.Val)) + recordOverhead
	}
	return 2 * n
}

// check is the guard, run before RocksDB sees a batch that costs cost bytes
// (batchCost): it returns a *NoSpaceError when the store already failed on a
// full disk, or when the file system cannot take the batch and still leave
// the reserve (the reserve file counting as available, since the store can
// give it back). When it refuses, it deletes the reserve file for RocksDB's
// background work. When the write may go ahead and the reserve file is
// missing or short, it (re)creates it.
func (sp *space) check(cost uint64) error {
	if sp.failed != nil {
		return &NoSpaceError{Dir: sp.dir, Cause: sp.failed}
	}
	if sp.reserve == 0 {
		return nil
	}
	avail, err := sp.avail()
	if err != nil {
		return err
	}
	need := cost + sp.reserve
	if avail+sp.have < need {
		sp.release()
		return &NoSpaceError{Dir: sp.dir, Refused: true, Avail: avail + sp.have, Need: need}
	}
	if sp.have < sp.file {
		if err := sp.allocate(); err != nil {
			sp.release()
			if isNoSpace(err) {
				return &NoSpaceError{Dir: sp.dir, Refused: true, Avail: avail, Need: need}
			}
			return fmt.Errorf("rocks: create reserve file: %w", err)
		}
	}
	return nil
}

// allocate makes the reserve file sp.file bytes long, with its blocks
// allocated (fallocate; written zeros where the file system lacks it).
func (sp *space) allocate() error {
	f, err := os.OpenFile(sp.path(), os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	err = syscall.Fallocate(int(f.Fd()), 0, 0, int64(sp.file))
	if errors.Is(err, syscall.EOPNOTSUPP) {
		err = writeZeros(f, int64(sp.have), int64(sp.file))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	sp.have = sp.file
	return nil
}

// writeZeros writes zeros into f from offset from up to to.
func writeZeros(f *os.File, from, to int64) error {
	buf := make([]byte, 1<<20)
	for off := from; off < to; off += int64(len(buf)) {
		n := min(int64(len(buf)), to-off)
		if _, err := f.WriteAt(buf[:n], off); err != nil {
			return err
		}
	}
	return nil
}

// release deletes the reserve file, giving its space to RocksDB.
func (sp *space) release() {
	if sp.have == 0 {
		return
	}
	if err := os.Remove(sp.path()); err == nil || errors.Is(err, os.ErrNotExist) {
		sp.have = 0
	}
}

// tight reports whether the file system has less than the reserve available
// (not counting the reserve file): then Close releases the reserve file before
// its flush.
func (sp *space) tight() bool {
	if sp.reserve == 0 {
		return false
	}
	avail, err := sp.avail()
	return err != nil || avail < sp.reserve
}

// fail records RocksDB's out-of-space error err and releases the reserve file;
// it returns the *NoSpaceError for the caller.
func (sp *space) fail(err error) error {
	sp.failed = err
	sp.release()
	return &NoSpaceError{Dir: sp.dir, Cause: err}
}

// ingestFailed turns an out-of-space error of a write by ingested files
// into a *NoSpaceError: Refused when RocksDB's database never saw the files
// (building them failed: an *ingestBuildError), since the same write then
// succeeds once space is freed; one of the flush or the ingestion is
// treated as RocksDB's own (fail). Other errors are returned as they are.
func (sp *space) ingestFailed(err error) error {
	if !isNoSpace(err) {
		return err
	}
	var built *ingestBuildError
	if errors.As(err, &built) {
		sp.release()
		return &NoSpaceError{Dir: sp.dir, Refused: true, Cause: err}
	}
	return sp.fail(err)
}

// isNoSpace reports whether err (from the OS or RocksDB) says the file system
// is full. RocksDB's errors reach Go as text: an IOError with the NoSpace
// subcode reads "IO error: No space left on device: ...".
func isNoSpace(err error) bool {
	if err == nil {
		return false
	}
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) ||
		strings.Contains(err.Error(), "No space left on device") ||
		strings.Contains(strings.ToLower(err.Error()), "disk quota exceeded")
}
