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
// written straight into SST files (RocksDB's SstFileWriter, fed the whole
// batch in one C call: the work of that flush, no more) and ingested: RocksDB links the files in at a sequence number
// above every earlier write, all column families at once (DB::IngestExternalFiles:
// after a crash either every file is in or none), syncing them and its
// MANIFEST, so the batch is durable when Write returns. A memtable holding keys
// in a file's range is flushed first, which keeps the order of writes.
//
// Write takes this path for a batch of at least Options.IngestBytes whose
// keys are in strictly ascending order within each column family, with no
// vertex both written and deleted and no LeafReset. A deleted prefix becomes
// a range tombstone in the leaf index's file; it covers older files only, not
// the file's own keys (they share its sequence number), which is the order
// Batch specifies: prefixes deleted first, then the leaves written.

// ingestPrefix starts the names of the files Write builds in the store's
// directory before ingesting them; Open deletes any left by a crash.
const ingestPrefix = "hexstate-ingest-"

// ingestable reports whether b can be written as ingested files (see above).
func (s *Store) ingestable(b *vertex.Batch) bool {
	if s.opts.IngestBytes < 0 || int64(batchCost(b)/2) < s.opts.IngestBytes || b.LeafReset {
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
	// A vertex both written and deleted: the merge in fillVertexFile would
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
type ingestBuildError struct {
	dir string
	err error
}

func (e *ingestBuildError) Error() string { return e.err.Error() }
func (e *ingestBuildError) Unwrap() error { return e.err }

// ingestFile is one SST file built for a column family.
type ingestFile struct {
	cf   *grocksdb.ColumnFamilyHandle
	path string
}

// writeIngest writes b (ingestable) as one SST file per column family it
// changes and ingests them together. The caller holds s.wmu and has passed the
// space guard. On an error nothing of b is in the store and the files are
// removed.
func (s *Store) writeIngest(b *vertex.Batch) (err error) {
	files, err := s.buildIngest(b)
	defer func() {
		if cap(s.rep.buf) > maxKeptRep {
			s.rep = batchRep{} // a bulk load's buffer is not kept for the next
		}
		for _, f := range files {
			if rerr := os.Remove(f.path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && err == nil {
				err = fmt.Errorf("remove ingested file: %w", rerr)
			}
		}
	}()
	if err != nil {
		return &ingestBuildError{dir: s.dir, err: err}
	}
	return s.ingest(files)
}

// buildIngest writes b's SST files, one per column family it changes, each
// from its records built in s.rep (the default family's tags: see
// hx_write_sst) and written in one C call. The caller removes the files, also
// on an error.
func (s *Store) buildIngest(b *vertex.Batch) (files []ingestFile, err error) {
	write := func(cf *grocksdb.ColumnFamilyHandle) error {
		f := ingestFile{cf: cf, path: filepath.Join(s.dir, ingestPrefix+cf.Name()+".sst")}
		files = append(files, f)
		return s.writeSST(f.path, s.rep.bytes())
	}
	if len(b.Puts) > 0 || len(b.Deletes) > 0 {
		s.rep.reset(repSize(&vertex.Batch{Puts: b.Puts, Deletes: b.Deletes}))
		fillVertexFile(&s.rep, b)
		if err := write(s.cfVertex); err != nil {
			return files, err
		}
	}
	if b.Admin != nil {
		s.rep.reset(len(adminKey) + len(b.Admin) + 16)
		s.rep.put(0, adminKey, b.Admin)
		if err := write(s.cfAdmin); err != nil {
			return files, err
		}
	}
	if b.LeafChanges() {
		s.rep.reset(repSize(&vertex.Batch{Leaves: b.Leaves, LeafPrefixDeletes: b.LeafPrefixDeletes}))
		// The deleted prefixes' range tombstones cover older files only,
		// which is all they need to cover: ingestable made sure no leaf of b
		// lies under one.
		fillLeaves(&s.rep, 0, b)
		if err := write(s.cfLeaves); err != nil {
			return files, err
		}
	}
	return files, nil
}

// fillVertexFile adds b's records and deletions to r in key order, as
// records of the default family (the file's own family is given at
// ingestion).
func fillVertexFile(r *batchRep, b *vertex.Batch) {
	var k [8]byte
	puts, dels := b.Puts, b.Deletes
	for len(puts) > 0 || len(dels) > 0 {
		if len(dels) == 0 || (len(puts) > 0 && puts[0].ID < dels[0]) {
			putKey(k[:], puts[0].ID)
			r.put(0, k[:], puts[0].Rec)
			puts = puts[1:]
			continue
		}
		putKey(k[:], dels[0])
		r.del(0, k[:])
		dels = dels[1:]
	}
}

// writeSST writes the SST file path from rep (see hx_write_sst) with the
// store's options, so that the file is in the format of the store's own.
func (s *Store) writeSST(path string, rep []byte) error {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	opts := *(**C.rocksdb_options_t)(unsafe.Pointer(s.native.db))
	var p *C.char
	if len(rep) > 0 {
		p = (*C.char)(unsafe.Pointer(&rep[0]))
	}
	if msg := C.hx_write_sst(opts, cpath, p, C.size_t(len(rep))); msg != nil {
		defer C.free(unsafe.Pointer(msg))
		return fmt.Errorf("write %s: %s", path, C.GoString(msg))
	}
	return nil
}

// ingest hands the finished files to RocksDB in one atomic ingestion.
func (s *Store) ingest(files []ingestFile) error {
	n := len(files)
	cfs := C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof(uintptr(0))))
	paths := C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof(uintptr(0))))
	defer C.free(cfs)
	defer C.free(paths)
	cfv := unsafe.Slice((**C.rocksdb_column_family_handle_t)(cfs), n)
	pv := unsafe.Slice((**C.char)(paths), n)
	for i, f := range files {
		cfv[i] = *(**C.rocksdb_column_family_handle_t)(unsafe.Pointer(f.cf))
		pv[i] = C.CString(f.path)
	}
	defer func() {
		for _, p := range pv {
			C.free(unsafe.Pointer(p))
		}
	}()
	db := *(**C.rocksdb_t)(unsafe.Pointer(s.db))
	if msg := C.hx_ingest_files(db, (**C.rocksdb_column_family_handle_t)(cfs), (**C.char)(paths), C.int(n)); msg != nil {
		defer C.free(unsafe.Pointer(msg))
		return fmt.Errorf("ingest %d files: %s", n, C.GoString(msg))
	}
	return nil
}

// removeIngestLeftovers deletes the files a Write was building when the
// process stopped (never ingested: an ingested file is renamed into RocksDB's
// own numbering).
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
