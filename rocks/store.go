package rocks

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/hexstate/hexstate/vertex"
	"github.com/linxGnu/grocksdb"
)

// Store is a hexstate vertex store in a RocksDB database; it implements
// trie.Backend. All methods are safe for concurrent use; Close waits for calls
// in flight to finish.
type Store struct {
	dir      string
	opts     Options
	readOnly bool

	// mu guards the native handles: every method holds it shared while it uses
	// them, Close holds it exclusively to release them.
	mu     sync.RWMutex
	closed bool

	db       *grocksdb.DB
	native   *nativeOptions
	cfAdmin  *grocksdb.ColumnFamilyHandle // default CF: marker and admin record
	cfVertex *grocksdb.ColumnFamilyHandle // vertices CF
	cfLeaves *grocksdb.ColumnFamilyHandle // leaf index CF; nil in a read-only store written without it
	ro       *grocksdb.ReadOptions        // shared by point reads (immutable)
	wo       *grocksdb.WriteOptions

	ranges rangePool // VertexRange's readers and their open iterators

	wmu   sync.Mutex // serialises Write (rep reuse) and guards space
	rep   batchRep   // Write's batch, built in RocksDB's representation
	space *space     // the free-space guard; nil when read-only

	walDamage *WALDamage // what a salvaging Open dropped; nil when nothing

	ingestSplit int // ingestFileBytes; tests make it smaller

	pointReads, rangeReads, records, leafReads atomic.Uint64
	batchReads, batchKeys                      atomic.Uint64
	ingested                                   atomic.Uint64 // Writes that went in as ingested files
}

// Dir returns the directory the store was opened in.
func (s *Store) Dir() string { return s.dir }

// Options returns the options the store was opened with, defaults filled in.
func (s *Store) Options() Options { return s.opts }

// acquire takes the shared lock and reports ErrClosed after Close. On nil the
// caller must call s.mu.RUnlock.
func (s *Store) acquire() error {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return ErrClosed
	}
	return nil
}

// acquireWritable is acquire for a call that changes the store: it fails with
// ErrReadOnly (holding nothing) on a read-only store.
func (s *Store) acquireWritable() error {
	if err := s.acquire(); err != nil {
		return err
	}
	if s.readOnly {
		s.mu.RUnlock()
		return ErrReadOnly
	}
	return nil
}

// Vertex returns the record of vertex id, or (nil, nil) when there is none. The
// caller owns the returned slice. It counts one point read.
func (s *Store) Vertex(id vertex.ID) ([]byte, error) {
	if err := s.acquire(); err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	var k [8]byte
	putKey(k[:], id)
	h, err := s.db.GetPinnedCF(s.ro, s.cfVertex, k[:])
	if err != nil {
		return nil, fmt.Errorf("rocks: read vertex %d: %w", id, err)
	}
	defer h.Destroy()
	s.pointReads.Add(1)
	if !h.Exists() {
		return nil, nil
	}
	s.records.Add(1)
	data := h.Data()
	rec := make([]byte, len(data))
	copy(rec, data)
	return rec, nil
}

// VertexRange calls fn in ascending ID order for every record whose ID lies in
// [first, first+n) (clamped at the largest ID), with one seek of a pooled
// iterator bounded above by first+n so that RocksDB reads no block past the
// range; the iterator sees every Write that returned before the call. rec is only
// valid during the call to fn. An error from fn stops the walk and is returned
// as is. It counts one range read (also when n <= 0, which reads nothing) and
// one record per call of fn.
func (s *Store) VertexRange(first vertex.ID, n int, fn func(id vertex.ID, rec []byte) error) error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	s.rangeReads.Add(1)
	if n <= 0 {
		return nil
	}
	last := uint64(first) + uint64(n) - 1
	if last < uint64(first) { // overflow: clamp to the largest ID
		last = math.MaxUint64
	}

	r := s.ranges.get()
	defer s.ranges.put(r)
	putKey(r.lower, first)
	bounded := last != math.MaxUint64
	if bounded {
		putKey(r.upper, vertex.ID(last+1))
	}
	var got int
	var err error
	r.buf, got, err = scanRange(r.iterator(bounded), r.lower, vertex.ID(last), r.buf, fn)
	s.records.Add(uint64(got))
	return err
}

// Admin returns the admin record, or (nil, nil) for a store never given one.
// The caller owns the returned slice. It is not counted in Stats.
func (s *Store) Admin() ([]byte, error) {
	if err := s.acquire(); err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	v, err := s.db.GetCF(s.ro, s.cfAdmin, adminKey)
	if err != nil {
		return nil, fmt.Errorf("rocks: read admin record: %w", err)
	}
	defer v.Free()
	if !v.Exists() {
		return nil, nil
	}
	data := v.Data()
	rec := make([]byte, len(data)) // non-nil even when empty
	copy(rec, data)
	return rec, nil
}

// Write applies b in one RocksDB write batch (puts, then deletes, then the admin
// record when b.Admin is not nil), so after a crash the store holds all of b or
// none of it. A record that is both put and deleted in b ends up deleted.
// With Options.Sync the write-ahead log is fsynced before Write returns. A nil
// or empty b writes nothing. A batch of at least Options.IngestBytes in key
// order is written instead as SST files ingested in one atomic step (no
// write-ahead log; durable when Write returns), with the same result.
//
// When the file system cannot take b and keep Options.ReserveBytes free,
// Write writes nothing and returns a *NoSpaceError (errors.Is ErrNoSpace) with
// Refused set; the same Write succeeds once space is freed. If RocksDB itself
// runs out of space, Write returns a *NoSpaceError without Refused and the
// store accepts no further writes until it is reopened.
func (s *Store) Write(b *vertex.Batch) error {
	if err := s.acquireWritable(); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	if b == nil || (len(b.Puts) == 0 && len(b.Deletes) == 0 && b.Admin == nil && !b.LeafChanges()) {
		return nil
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if b.LeafReset {
		// A range tombstone over the whole index makes every file ingested
		// after it overlap it and go to level 0, until a compaction takes it
		// down: a load's first batch resets the index, whose only key is
		// the marker of a new database's complete (empty) index. An index
		// of one key is emptied by deleting that key, first, on its own
		// (emptying the index ahead of the batch loses nothing: an index
		// without its marker is not read, docs/format.md §10).
		only, ok, err := s.onlyKey(s.cfLeaves)
		if err != nil {
			return fmt.Errorf("rocks: write batch: reading the leaf index: %w", err)
		}
		if ok {
			if only != nil {
				if err := s.db.DeleteCF(s.wo, s.cfLeaves, only); err != nil {
					return fmt.Errorf("rocks: write batch: emptying the leaf index: %w", err)
				}
			}
			nb := *b
			nb.LeafReset = false
			b = &nb
		}
	}
	cost := batchCost(b)
	if err := s.space.check(cost); err != nil {
		return fmt.Errorf("rocks: write batch (%d puts, %d deletes): %w", len(b.Puts), len(b.Deletes), err)
	}
	if s.ingestable(b, cost) {
		if err := s.writeIngest(b); err != nil {
			return fmt.Errorf("rocks: write batch (%d puts, %d deletes) as SST files: %w", len(b.Puts), len(b.Deletes), s.space.ingestFailed(err))
		}
		s.ingested.Add(1)
		s.ranges.invalidate()
		return nil
	}
	s.fill(b)
	err := s.writeRep(s.rep.bytes())
	s.rep.release()
	if err != nil {
		if isNoSpace(err) {
			err = s.space.fail(err)
		}
		return fmt.Errorf("rocks: write batch (%d puts, %d deletes): %w", len(b.Puts), len(b.Deletes), err)
	}
	s.ranges.invalidate()
	return nil
}

// fill builds b's records, deletions, admin record and leaf-index changes
// into s.rep.
func (s *Store) fill(b *vertex.Batch) {
	r := &s.rep
	r.reset(repSize(b))
	var k [8]byte
	cf := s.cfVertex.ID()
	for _, rec := range b.Puts {
		putKey(k[:], rec.ID)
		r.putRecord(cf, k[:], b, rec.Rec)
	}
	for _, id := range b.Deletes {
		putKey(k[:], id)
		r.del(cf, k[:])
	}
	if b.Admin != nil {
		r.put(s.cfAdmin.ID(), adminKey, b.Admin)
	}
	if s.cfLeaves != nil { // nil only when read-only: Write refuses before this
		leaves := leafFill{b: b, cf: s.cfLeaves.ID()}
		leaves.fill(r, math.MaxInt)
	}
}

// Stats returns the reads served since Open: Vertex calls (PointReads),
// VertexRange calls (RangeReads), Vertices calls and their IDs (BatchReads,
// BatchKeys) and the records they returned (Records).
// It works after Close too.
func (s *Store) Stats() vertex.ReadStats {
	return vertex.ReadStats{
		PointReads: s.pointReads.Load(),
		RangeReads: s.rangeReads.Load(),
		BatchReads: s.batchReads.Load(),
		BatchKeys:  s.batchKeys.Load(),
		Records:    s.records.Load(),
		LeafReads:  s.leafReads.Load(),
	}
}

// Close flushes the memtables to SST files (unless read-only), closes the
// database and frees every native resource. It waits for calls in flight. A
// second Close returns nil. The database is closed even when the flush fails;
// the flush error is returned (the write-ahead log still holds the data).
//
// On a nearly full disk Close first deletes the reserve file (see
// Options.ReserveBytes) to give the flush room; after RocksDB ran out of space
// (a Write returned a *NoSpaceError without Refused) it does not flush at all,
// leaving the acknowledged writes in the write-ahead log for the next Open.
// Either way it does not abort the process.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var err error
	if !s.readOnly && s.space.failed == nil { // no Write or flush in flight: s.mu is held exclusively
		if s.space.tight() {
			s.space.release()
		}
		err = s.flush()
	}
	s.release()
	return err
}

// flush writes both memtables to SST files and waits. Caller holds s.mu
// (shared with wmu, or exclusively). After RocksDB ran out of space it returns
// the *NoSpaceError without flushing; a flush that runs out of space puts the
// store in that state.
func (s *Store) flush() error {
	s.wmu.Lock()
	failed := s.space.failed
	s.wmu.Unlock()
	if failed != nil {
		return &NoSpaceError{Dir: s.dir, Cause: failed}
	}
	err := s.flushCFs()
	if isNoSpace(err) {
		s.wmu.Lock()
		err = s.space.fail(err)
		s.wmu.Unlock()
	}
	return err
}

// release closes the database and frees the native objects, in the order
// RocksDB needs (handles before the DB, options after it).
func (s *Store) release() {
	s.ranges.destroy()
	s.cfVertex.Destroy()
	s.cfAdmin.Destroy()
	if s.cfLeaves != nil {
		s.cfLeaves.Destroy()
	}
	s.db.Close()
	s.ro.Destroy()
	s.wo.Destroy()
	s.native.destroy()
	s.rep.free()
}
