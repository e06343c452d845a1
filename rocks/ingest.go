package rocks

// #cgo CXXFLAGS: -std=c++17
// #cgo LDFLAGS: -lrocksdb -lstdc++
// #include <stdlib.h>
// #include "ingest.h"
import "C"

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"unsafe"

	"github.com/hexstate/hexstate/vertex"
	"github.com/linxGnu/grocksdb"
)

// Large batches as ingested files. A persist of many blocks is one batch of
// ~1M changes; written the usual way, RocksDB appends all of it to the
// write-ahead log, inserts every key into a memtable's skiplist (slower the
// fuller the memtable) and later, on a background thread, flushes the
// memtables into a level-0 SST file. Sorted already, the batch can instead be
// written straight into SST files (RocksDB's SstFileWriter, fed the batch's
// records a few dozen per C call: the work of that flush, no more) and
// ingested: RocksDB links the files in at a sequence number above every
// earlier write, all column families at once (DB::IngestExternalFiles: after
// a crash either every file is in or none), syncing them and its MANIFEST,
// so the batch is durable when Write returns. The memtables are flushed
// first (see writeIngest).
//
// Write takes this path for a batch of at least Options.IngestBytes (a
// load's, vertex.Batch.Load, of any size) whose keys are in strictly
// ascending order within each column family, with no
// vertex both written and deleted and no LeafReset. A deleted prefix becomes
// a range tombstone in the leaf index's file; it covers older files only, not
// the file's own keys (they share its sequence number), which is the order
// Batch specifies: prefixes deleted first, then the leaves written.

// ingestPrefix starts the names of the files Write builds in the store's
// directory before ingesting them; Open deletes any left by a crash.
const ingestPrefix = "hexstate-ingest-"

// ingestable reports whether b, of cost bytes (batchCost), can be written as
// ingested files (see above).
func (s *Store) ingestable(b *vertex.Batch, cost uint64) bool {
	if s.opts.IngestBytes < 0 || (int64(cost/2) < s.opts.IngestBytes && !b.Load) || b.LeafReset {
		return false
	}
	for i := 1; i < len(b.Puts); i++ {
		if b.Puts[i-1].ID >= b.Puts[i].ID {
			return false
		}
	}
	for i := 1; i < len(b.Deletes); i++ {
		if b.Deletes[i-1] >= b.Deletes[i] {
			return false
		}
	}
	if b.LeafChanges() && s.cfLeaves == nil {
		return false
	}
	for i := 1; i < len(b.Leaves); i++ {
		if bytes.Compare(b.Leaves[i-1].Key, b.Leaves[i].Key) >= 0 {
			return false
		}
	}
	// A vertex both written and deleted: the merge in fillVertices would
	// meet the same key twice.
	i, j := 0, 0
	for i < len(b.Puts) && j < len(b.Deletes) {
		switch a, d := b.Puts[i].ID, b.Deletes[j]; {
		case a == d:
			return false
		case a < d:
			i++
		default:
			j++
		}
	}
	return true
}

// ingestBuildError is an error of building a batch's files, before RocksDB's
// database saw them.
type ingestBuildError struct{ err error }

func (e *ingestBuildError) Error() string { return e.err.Error() }
func (e *ingestBuildError) Unwrap() error { return e.err }

// ingestFile is the SST files built for a column family: one, or for a large
// batch several with ascending, disjoint key ranges (see ingestFileBytes).
type ingestFile struct {
	cf    *grocksdb.ColumnFamilyHandle
	paths []string
}

// writeIngest writes b (ingestable) as SST files of each column family it
// changes and ingests them together. The caller holds s.wmu and has passed the
// space guard. On an error nothing of b is in the store and the files are
// removed.
func (s *Store) writeIngest(b *vertex.Batch) (err error) {
	files, err := s.buildIngest(b)
	defer func() {
		s.rep.release()
		// Best effort: RocksDB unlinks the names of files it took in, and
		// Open removes any left (an error here must not fail a write that
		// landed).
		for _, f := range files {
			for _, path := range f.paths {
				_ = os.Remove(path)
			}
		}
	}()
	if err != nil {
		return &ingestBuildError{err: err}
	}
	// Every earlier write goes to SST files first, so that the memtables and
	// the write-ahead log hold nothing older than the ingested files: a
	// power loss cannot keep this batch and lose an earlier one still in an
	// unsynced log, a salvaging Open (SalvageWAL) never meets files ahead of
	// a damaged log, and RocksDB 7.8's check of level 0's sequence numbers
	// cannot take a later flush of older keys for corruption (its false
	// positive with ingested files, fixed in RocksDB 7.10). Between persists
	// of many blocks the memtables are empty and this costs nothing.
	if err := s.flushCFs(); err != nil {
		return err
	}
	return s.ingest(files)
}

// buildIngest writes b's SST files for each column family it changes, each
// family's records built in s.rep a part at a time (the default family's
// tags) and handed to RocksDB's SST writer (writeSST). A file whose key range
// holds no key yet (a build's first batch, say) will be ingested at the
// bottom level and is compressed for it; the others, as a flush would write
// them. The caller removes the files, also on an error.
func (s *Store) buildIngest(b *vertex.Batch) (files []ingestFile, err error) {
	// family starts cf's files: whether they go to the bottom level (their
	// key range [first, last] holds no key yet) and where their paths go.
	family := func(cf *grocksdb.ColumnFamilyHandle, first, last []byte) (*ingestFile, bool) {
		files = append(files, ingestFile{cf: cf})
		return &files[len(files)-1], first != nil && !s.holdsKeyIn(cf, first, last)
	}
	if len(b.Puts) > 0 || len(b.Deletes) > 0 {
		lo, hi := vertexBounds(b)
		var first, last [8]byte
		putKey(first[:], lo)
		putKey(last[:], hi)
		f, bottom := family(s.cfVertex, first[:], last[:])
		puts, dels := b.Puts, b.Deletes
		if err := s.writeSST(f, bottom, true, func(r *batchRep, limit int) bool {
			puts, dels = fillVertices(r, b, puts, dels, limit)
			return len(puts) > 0 || len(dels) > 0
		}); err != nil {
			return files, err
		}
	}
	if b.Admin != nil {
		f, bottom := family(s.cfAdmin, nil, nil)
		if err := s.writeSST(f, bottom, false, func(r *batchRep, _ int) bool {
			r.put(0, adminKey, b.Admin)
			return false
		}); err != nil {
			return files, err
		}
	}
	if b.LeafChanges() {
		var first, last []byte
		if len(b.Leaves) > 0 && len(b.LeafPrefixDeletes) == 0 {
			first, last = b.Leaves[0].Key, b.Leaves[len(b.Leaves)-1].Key
		}
		f, bottom := family(s.cfLeaves, first, last)
		// The deleted prefixes' range tombstones cover older files only:
		// the leaves written under them stay (see above). A range tombstone
		// may span the cuts between files, which must not overlap: a file
		// with tombstones is not split.
		leaves := leafFill{b: b}
		if err := s.writeSST(f, bottom, len(b.LeafPrefixDeletes) == 0, leaves.fill); err != nil {
			return files, err
		}
	}
	return files, nil
}

// vertexBounds returns the least and the greatest vertex ID b writes or
// deletes (it writes or deletes one at least; both lists are sorted).
func vertexBounds(b *vertex.Batch) (lo, hi vertex.ID) {
	lo, hi = ^vertex.ID(0), 0
	if n := len(b.Puts); n > 0 {
		lo, hi = b.Puts[0].ID, b.Puts[n-1].ID
	}
	if n := len(b.Deletes); n > 0 {
		lo, hi = min(lo, b.Deletes[0]), max(hi, b.Deletes[n-1])
	}
	return lo, hi
}

// holdsKeyIn reports whether column family cf holds a key in [first, last]
// (or a read error left it unknown): one seek.
func (s *Store) holdsKeyIn(cf *grocksdb.ColumnFamilyHandle, first, last []byte) bool {
	it := s.db.NewIteratorCF(s.ro, cf)
	defer it.Close()
	it.Seek(first)
	if !it.Valid() {
		return it.Err() != nil
	}
	k := it.Key()
	defer k.Free()
	return bytes.Compare(k.Data(), last) <= 0
}

// onlyKey returns the key of column family cf when it holds at most one
// (nil when none; ok false when it holds more).
func (s *Store) onlyKey(cf *grocksdb.ColumnFamilyHandle) (key []byte, ok bool, err error) {
	it := s.db.NewIteratorCF(s.ro, cf)
	defer it.Close()
	it.SeekToFirst()
	if !it.Valid() {
		return nil, true, it.Err()
	}
	k := it.Key()
	key = bytes.Clone(k.Data())
	k.Free()
	it.Next()
	return key, !it.Valid(), it.Err()
}

// fillVertices adds the records puts (b's, as b stores them) and the
// deletions dels (both sorted) to r in key order, as records of the default
// family (the file's own family is given at ingestion), until r holds limit
// bytes or more, and returns what it did not add.
func fillVertices(r *batchRep, b *vertex.Batch, puts []vertex.Record, dels []vertex.ID, limit int) ([]vertex.Record, []vertex.ID) {
	var k [8]byte
	for (len(puts) > 0 || len(dels) > 0) && len(r.buf) < limit {
		if len(dels) == 0 || (len(puts) > 0 && puts[0].ID < dels[0]) {
			putKey(k[:], puts[0].ID)
			r.putRecord(0, k[:], b, puts[0].Rec)
			puts = puts[1:]
			continue
		}
		putKey(k[:], dels[0])
		r.del(0, k[:])
		dels = dels[1:]
	}
	return puts, dels
}

// repSlack is the room s.rep is given beyond a part's records, for the
// record that takes it past the part's size (a vertex record is under a
// kilobyte; a larger one is appended to the heap).
const repSlack = 64 << 10

// repPart is the size of the parts in which writeSST has s.rep hold a file's
// records. The representation is only a way into the SST writer, which
// copies what it is given: built whole, a 64-block persist's was ~66 MiB,
// kept resident from one persist to the next, at the process's peak
// (docs/benchmarks.md §10.9).
const repPart = 4 << 20

// sstRun is the number of records writeSST hands to the SST writer per C
// call: a few dozen microseconds of work, so that the writing goroutine stays
// on its processor and the Go scheduler shares the cores between it and the
// blocks executing beside it. One long C call would run on a thread of its
// own beside GOMAXPROCS others, and the blocks' time doubled while it ran
// (docs/benchmarks.md §9). writeSST yields every sstYield runs.
const (
	sstRun   = 32
	sstYield = 32
)

// ingestFileBytes is the size of a family's records (as laid out in s.rep)
// past which writeSST starts another file: a bulk load's batch of gigabytes
// becomes files of about RocksDB's target file size (64 MiB, before
// compression), as flushes and compactions would make them, not one file
// that every later compaction into its key range would rewrite whole.
const ingestFileBytes = 64 << 20

// writeSST writes the SST files of f with the store's options, so that they
// are in the format of the store's own: as RocksDB writes the bottom level
// when bottom, else as a memtable flush writes (see hx_sst_open). fill adds
// the next of the family's records in key order to r (a write batch's
// representation, records of the default family) until r holds limit bytes
// or more, and reports whether records remain; writeSST hands each part to
// the SST writer. With split, a file ends at the first part's end past
// s.ingestSplit (ingestFileBytes) of records, and the next one takes the
// rest. It adds each file's path to f.paths before creating it.
func (s *Store) writeSST(f *ingestFile, bottom, split bool, fill func(r *batchRep, limit int) (more bool)) error {
	part := min(repPart, s.ingestSplit)
	var w *sstFile
	defer func() {
		if w != nil {
			w.destroy()
		}
	}()
	written := 0
	for more := true; more; {
		s.rep.reset(part + repSlack)
		more = fill(&s.rep, part)
		rep := s.rep.bytes()
		if len(rep) == batchRepHeader {
			continue
		}
		if w != nil && split && written >= s.ingestSplit {
			err := w.finish()
			w.destroy()
			if w = nil; err != nil {
				return err
			}
		}
		if w == nil {
			path := filepath.Join(s.dir, fmt.Sprintf("%s%s-%d.sst", ingestPrefix, f.cf.Name(), len(f.paths)))
			f.paths = append(f.paths, path)
			var err error
			if w, err = s.openSST(path, s.native.cfOptions(f.cf.Name()), bottom); err != nil {
				return err
			}
			written = 0
		}
		if err := w.add(rep[batchRepHeader:]); err != nil {
			return err
		}
		written += len(rep) - batchRepHeader
	}
	if w == nil {
		return nil
	}
	return w.finish()
}

// sstFile is an SST file being written.
type sstFile struct {
	f    *C.hx_sst
	path string
}

// openSST creates the SST file path with the options of its column family
// (cfOpts), for the bottom level when bottom.
func (s *Store) openSST(path string, cfOpts *grocksdb.Options, bottom bool) (*sstFile, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	opts := *(**C.rocksdb_options_t)(unsafe.Pointer(cfOpts))
	var msg *C.char
	f := C.hx_sst_open(opts, cpath, C.bool(bottom), C.bool(!s.opts.FullLoadCompression), C.double(s.opts.BloomBitsPerKey), &msg)
	if f == nil {
		defer C.free(unsafe.Pointer(msg))
		return nil, fmt.Errorf("create %s: %s", path, C.GoString(msg))
	}
	return &sstFile{f: f, path: path}, nil
}

// add adds recs, records of a write batch's representation (no header), to
// w, sstRun records per C call, yielding every sstYield calls.
func (w *sstFile) add(recs []byte) error {
	for off, runs := 0, 0; off < len(recs); runs++ {
		var used C.size_t
		if msg := C.hx_sst_add(w.f, (*C.char)(unsafe.Pointer(&recs[off])), C.size_t(len(recs)-off), sstRun, &used); msg != nil {
			defer C.free(unsafe.Pointer(msg))
			return fmt.Errorf("write %s: %s", w.path, C.GoString(msg))
		}
		if off += int(used); runs%sstYield == sstYield-1 {
			runtime.Gosched()
		}
	}
	return nil
}

// finish completes w's file.
func (w *sstFile) finish() error {
	if msg := C.hx_sst_finish(w.f); msg != nil {
		defer C.free(unsafe.Pointer(msg))
		return fmt.Errorf("write %s: %s", w.path, C.GoString(msg))
	}
	return nil
}

// destroy frees w's writer (the file stays).
func (w *sstFile) destroy() { C.hx_sst_destroy(w.f) }

// ingest hands the finished files to RocksDB in one atomic ingestion.
func (s *Store) ingest(files []ingestFile) error {
	// Go slices holding C pointers only, so C may read them.
	cfs := make([]*C.rocksdb_column_family_handle_t, len(files))
	counts := make([]C.int, len(files))
	var paths []*C.char
	defer func() {
		for _, p := range paths {
			C.free(unsafe.Pointer(p))
		}
	}()
	for i, f := range files {
		cfs[i] = *(**C.rocksdb_column_family_handle_t)(unsafe.Pointer(f.cf))
		counts[i] = C.int(len(f.paths))
		for _, p := range f.paths {
			paths = append(paths, C.CString(p))
		}
	}
	db := *(**C.rocksdb_t)(unsafe.Pointer(s.db))
	if msg := C.hx_ingest_files(db, &cfs[0], &counts[0], &paths[0], C.int(len(files))); msg != nil {
		defer C.free(unsafe.Pointer(msg))
		return fmt.Errorf("ingest %d files: %s", len(paths), C.GoString(msg))
	}
	return nil
}

// removeIngestLeftovers deletes the files a Write was building or ingesting
// when the process stopped: never ingested, or ingested and still to be
// removed (RocksDB hard-links an ingested file under its own numbering, so
// the name it was built under is no part of the database either way).
func removeIngestLeftovers(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ingestPrefix) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}
