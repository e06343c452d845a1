package rocks

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/linxGnu/grocksdb"
)

// Write-ahead-log damage. RocksDB's default recovery mode (point-in-time)
// replays the log up to the first record it cannot read and silently drops
// everything after it, intact writes included; only its info LOG says so. The
// store opens RocksDB in the tolerate-corrupted-tail mode instead, which
// accepts a last record cut short (what a crash mid-write leaves, a write that
// was never acknowledged) but fails on damage anywhere else. Open then probes
// the store read-only in point-in-time mode to learn what a salvaging open
// would keep, and returns ErrWALCorrupt with that report, or, with
// Options.SalvageWAL, opens it in point-in-time mode and keeps the report for
// Store.WALDamage.

// WALDamage describes a write-ahead log damaged before its end: what RocksDB
// reported, and the state a salvaging open keeps (the writes before the
// damage). It is in OpenError.WAL when Open refused the store, and returned by
// Store.WALDamage when Options.SalvageWAL opened it.
//
// Admin is the admin record as of the last write kept, raw: package trie
// decodes it (its block number is the last block kept). The writes after the
// damage are not in the store; a log kept beside it (such as a journal of
// persisted frames) may hold them and can be replayed on top of the salvaged
// store, starting after Admin's block.
type WALDamage struct {
	// Detail is RocksDB's report of the damage, e.g. "Corruption: checksum
	// mismatch".
	Detail string
	// Logs are the names of the write-ahead log files in the store directory
	// when Open found the damage (a read-write salvaging open deletes them once
	// RocksDB has flushed what it recovered).
	Logs []string
	// Sequence is RocksDB's sequence number of the last write kept.
	Sequence uint64
	// Admin is the admin record as of the last write kept, nil when the store
	// had none by then. The caller owns it.
	Admin []byte
}

// WALDamage reports the damage that Options.SalvageWAL made Open accept: the
// state kept and what RocksDB said. It returns nil when the store opened with
// an intact write-ahead log (a last record cut short by a crash counts as
// intact: it was never acknowledged). The report stays available after Close.
func (s *Store) WALDamage() *WALDamage {
	if s.walDamage == nil {
		return nil
	}
	d := *s.walDamage
	d.Logs = slices.Clone(d.Logs)
	d.Admin = slices.Clone(d.Admin)
	return &d
}

// isCorruption reports whether a RocksDB open error is a Corruption status.
func isCorruption(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "Corruption")
}

// probeWAL opens dir read-only in point-in-time mode (RocksDB's default, which
// stops at the first damaged log record), with the info log sent to a
// temporary directory, and reports what that recovery keeps. It returns nil
// when even that open fails: then the damage is not (only) in the log.
func probeWAL(dir string, cause error) *WALDamage {
	logDir, err := os.MkdirTemp("", "hexstate-rocks-walprobe-")
	if err != nil {
		return nil
	}
	defer os.RemoveAll(logDir)

	o := grocksdb.NewDefaultOptions()
	defer o.Destroy()
	o.SetDbLogDir(logDir)
	o.SetMaxOpenFiles(16)
	o.SetSkipStatsUpdateOnDBOpen(true)
	o.SetWALRecoveryMode(grocksdb.PointInTimeRecovery)
	names, err := grocksdb.ListColumnFamilies(o, dir)
	if err != nil || names[0] != cfDefault {
		return nil
	}
	db, cfs, err := grocksdb.OpenDbForReadOnlyColumnFamilies(o, dir, names, slices.Repeat([]*grocksdb.Options{o}, len(names)), false)
	if err != nil {
		return nil
	}
	defer func() {
		for _, cf := range cfs {
			cf.Destroy()
		}
		db.Close()
	}()
	d := &WALDamage{Detail: cause.Error(), Logs: walFiles(dir), Sequence: db.GetLatestSequenceNumber()}
	ro := grocksdb.NewDefaultReadOptions()
	defer ro.Destroy()
	v, err := db.GetCF(ro, cfs[0], adminKey)
	if err != nil {
		return nil
	}
	if v.Exists() {
		d.Admin = slices.Clone(v.Data())
	}
	v.Free()
	return d
}

// walFiles lists the write-ahead log files in dir, by name.
func walFiles(dir string) []string {
	paths, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	names := make([]string, len(paths))
	for i, p := range paths {
		names[i] = filepath.Base(p)
	}
	slices.Sort(names)
	return names
}
