package trie

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/vertex"
)

// loadWriter is what a StateLoader and a CopyFrom share: they write an empty
// database's backend themselves, in sorted batches behind the work that
// fills them, and commit with a last batch that carries the admin record.
// It holds the database's loading flag from the start of the load until
// release.
type loadWriter struct {
	db   *DB
	base *Frame // the base the load started on; every write requires it unchanged
	what string // names the load in errors ("state loader", "copy")
	// warm puts the written records into the vertex cache, as a persist
	// does, until the cache drops a record to make room: a load larger than
	// the cache. From the next batch on only the records named by keepWarm
	// are put (a StateLoader's account-trie branches, but for those held
	// back for the commit), since the rest would only push each other out,
	// at the cost of a fifth of the load's CPU (docs/design.md §8, "The
	// cache warmed by a load").
	warm bool
	// evicted is the cache's Stats().Evicted when the load began.
	evicted uint64

	cur      *loaderBatch // the batch being filled
	spare    *loaderBatch // the other one: in flight while inflight is not nil
	inflight chan error   // the result of the write in flight, nil when none
	written  uint64       // records written
	bytes    uint64       // bytes of records written
	released bool         // the database's loading flag is cleared
	// reset is set once a batch has emptied the leaf index (the first one
	// does: an index the load does not fill must not be taken as complete);
	// leaves says the load fills it (a StateLoader does), so that the commit
	// marks it complete.
	reset, leaves bool

	// hold is set for a load whose IDs are handed out as it goes (a
	// StateLoader, a copy): a batch's records at or below the highest ID
	// of the batches before it (cut) are held back and written with the
	// commit (see holdStragglers; a copy's checkpoints carry them,
	// copyState).
	hold    bool
	cut     vertex.ID
	held    []vertex.Record
	heldBuf []byte
}

// maxHeldBytes bounds the records a load holds back (holdStragglers): past
// it they go out with the next batch.
const maxHeldBytes = 64 << 20

// loaderBatch is a batch of records and the buffer they are encoded in. A
// load has two: it fills one while the other is being written.
type loaderBatch struct {
	batch vertex.Batch
	buf   []byte
	// warmAll says every record of the batch goes into the vertex cache
	// when written; else those of warmIDs do (loadWriter.warm).
	warmAll bool
	warmIDs []vertex.ID
}

// newLoadWriter starts a load on db's base. The caller holds db.mu and has
// checked that no other load runs; the load's loading flag is set here.
func newLoadWriter(db *DB, what string, warm bool) loadWriter {
	db.loading = true
	// The load's batches empty the index and refill it: until the commit
	// marks it complete, reads must not use it.
	db.leafIdx = false
	db.leaves.landed(nil)
	w := loadWriter{db: db, base: db.base, what: what, warm: warm, cur: new(loaderBatch), spare: new(loaderBatch)}
	if warm {
		w.evicted = db.cache.Stats().Evicted
	}
	w.cur.warmAll = w.cacheHasRoom()
	return w
}

// cacheHasRoom reports whether the batch about to be filled warms the
// vertex cache with every record: the load warms it, and the cache has
// dropped no record to make room since the load began (loadWriter.warm).
func (w *loadWriter) cacheHasRoom() bool {
	return w.warm && w.db.cache.Stats().Evicted == w.evicted
}

// keepWarm names id, just put in the batch being filled, as a record the
// load warms the vertex cache with even once the cache is full.
func (w *loadWriter) keepWarm(id vertex.ID) {
	if w.warm && !w.cur.warmAll {
		w.cur.warmIDs = append(w.cur.warmIDs, id)
	}
}

// put adds the record of id, the bytes of the batch's buffer from start on,
// to the batch being filled.
func (w *loadWriter) put(id vertex.ID, start int) {
	b := w.cur
	b.batch.Puts = append(b.batch.Puts, vertex.Record{ID: id, Rec: b.buf[start:len(b.buf):len(b.buf)]})
}

// putVertex encodes the finished vertex v of ID id into the batch being
// filled, without its children's keys when the database stores none
// (Options.Records), as Persist does.
func (w *loadWriter) putVertex(id vertex.ID, v *vertex.Vertex) {
	if w.db.noChild && v.ChildKeys != nil {
		cp := *v
		cp.ChildKeys = nil
		v = &cp
	}
	b := w.cur
	start := len(b.buf)
	b.buf = vertex.Encode(b.buf, v)
	w.put(id, start)
}

// writeBehind hands the batch being filled to a goroutine that writes it
// while the load goes on filling the other one (after the write before it is
// done). Hashing or reading and RocksDB's inserts then run side by side, on
// two cores.
func (w *loadWriter) writeBehind() error {
	if err := w.wait(); err != nil {
		return err
	}
	b := w.cur
	if w.hold {
		w.holdStragglers(b)
	}
	w.cur, w.spare = w.spare, b
	w.cur.warmAll = w.cacheHasRoom()
	done := make(chan error, 1)
	w.inflight = done
	go func() {
		w.db.mu.Lock()
		defer w.db.mu.Unlock()
		done <- w.writeLocked(b, nil)
	}()
	return nil
}

// holdStragglers moves the records of b at or below the cut (the highest ID
// written) into the held records, and cuts at b's highest ID.
//
// Why: a load's batches are ingested as files (vertex.Batch.Load), and a
// file whose ID range lies above every file before it goes to the bottom
// level of the LSM as it is; one that overlaps them lands above and is
// compacted with all it overlaps (docs/design.md §8, "A load's files go to
// the bottom level as they are"). The builder and the copy's walk hand out
// IDs in the order they finish vertices, so a batch's records all lie above
// the cut but for the trie's top vertex, placed at RootID when the load
// ends: held back, it is written with the commit in a file of its own,
// below every other. Any other straggler is held back the same way.
func (w *loadWriter) holdStragglers(b *loaderBatch) {
	puts, cut := b.batch.Puts[:0], w.cut
	for _, r := range b.batch.Puts {
		if r.ID > w.cut {
			puts = append(puts, r)
			cut = max(cut, r.ID)
			continue
		}
		w.holdRecord(r)
	}
	b.batch.Puts, w.cut = puts, cut
	if len(w.heldBuf) >= maxHeldBytes {
		w.releaseHeld(b)
	}
}

// holdRecord adds a copy of r to the held records (a resumed copy restores
// its checkpoint's this way).
func (w *loadWriter) holdRecord(r vertex.Record) {
	start := len(w.heldBuf)
	w.heldBuf = append(w.heldBuf, r.Rec...)
	w.held = append(w.held, vertex.Record{ID: r.ID, Rec: w.heldBuf[start:len(w.heldBuf):len(w.heldBuf)]})
}

// releaseHeld adds the held records to b: b's records then refer to the held
// bytes, which a new buffer replaces.
func (w *loadWriter) releaseHeld(b *loaderBatch) {
	b.batch.Puts = append(b.batch.Puts, w.held...)
	w.held, w.heldBuf = nil, nil
}

// wait returns the result of the write in flight, if any, once it is done.
func (w *loadWriter) wait() error {
	if w.inflight == nil {
		return nil
	}
	err := <-w.inflight
	w.inflight = nil
	return err
}

// commit writes the batch being filled with the admin record of block, root
// and alloc's top, makes the loaded state the database's persisted state,
// calls committed (when not nil) and compacts the store (compact.go). The
// write in flight, if any, must be done.
func (w *loadWriter) commit(alloc vertex.Allocator, block uint64, root hashkey.Hash, committed func()) error {
	if err := w.commitLocked(alloc, block, root); err != nil {
		return err
	}
	// The batches are done with: let the compaction (minutes for a large
	// state) and whatever runs beside it have their memory.
	w.cur, w.spare = nil, nil
	if committed != nil {
		committed()
	}
	return w.db.compactBuilt(w.what)
}

func (w *loadWriter) commitLocked(alloc vertex.Allocator, block uint64, root hashkey.Hash) error {
	db := w.db
	a := admin{format: db.format, records: db.records, top: alloc.Top, block: block, root: root}
	db.mu.Lock()
	defer db.mu.Unlock()
	// The batch being filled lies above every batch written, the held
	// records below them (the top vertex at RootID), and the leaf index's
	// marker among the index's keys: written together, their files would
	// span all the others and be compacted with them. Written apart, the
	// records above first, each goes to the bottom level as it is. The load
	// is not visible before the last write, the admin record's.
	if w.hold {
		w.holdStragglers(w.cur)
	}
	if b := &w.cur.batch; len(b.Puts) > 0 || len(b.Leaves) > 0 {
		if err := w.writeLocked(w.cur, nil); err != nil {
			return err
		}
	}
	w.releaseHeld(w.cur)
	if w.leaves {
		w.cur.batch.Leaves = append(w.cur.batch.Leaves, vertex.LeafEntry{Key: leafMarkerKey, Val: leafMarkerValue})
	}
	if err := w.writeLocked(w.cur, a.encode()); err != nil {
		return err
	}
	db.adoptLoadedLocked(alloc, block, root)
	db.leafIdx = w.leaves
	db.leaves.landed(nil)
	return nil
}

// writeLocked writes b (with admin, when not nil) and empties it; the caller
// holds the database's lock.
func (w *loadWriter) writeLocked(b *loaderBatch, admin []byte) error {
	if w.db.closed {
		return ErrClosed
	}
	if w.db.base != w.base {
		return ErrStale // a Persist moved the base: the IDs taken here may be in use
	}
	// In ID order, as a persist writes them (RocksDB inserts sorted keys faster).
	puts := b.batch.Puts
	slices.SortFunc(puts, func(x, y vertex.Record) int { return cmp.Compare(x.ID, y.ID) })
	b.batch.Admin = admin
	b.batch.LeafReset = !w.reset
	b.batch.Load = true // its files go to the bottom level as they are (holdStragglers)
	w.db.wmu.Lock()
	err := w.db.backend.Write(&b.batch)
	w.db.wmu.Unlock()
	if err != nil {
		return fmt.Errorf("trie: %s: writing %d records: %w", w.what, len(puts), err)
	}
	w.warmCache(b)
	w.reset = true
	w.written += uint64(len(puts))
	w.bytes += uint64(len(b.buf))
	b.batch = vertex.Batch{Puts: puts[:0]}
	b.buf = b.buf[:0]
	return nil
}

// warmCache puts the records of b, just written and sorted by ID, that the
// load warms the vertex cache with (loadWriter.warm) into the cache.
//
// Until the commit these records lie above the allocator's top and nothing
// refers to them; if the load never commits they stay unreferenced in the
// cache as in the store, and any frame that later takes one of their IDs
// writes (and re-caches) it before anything can read it.
func (w *loadWriter) warmCache(b *loaderBatch) {
	if b.warmAll {
		for _, r := range b.batch.Puts {
			w.db.cache.Put(r.ID, r.Rec)
		}
		return
	}
	ids := b.warmIDs
	slices.Sort(ids)
	for _, r := range b.batch.Puts {
		for len(ids) > 0 && ids[0] < r.ID {
			ids = ids[1:]
		}
		if len(ids) == 0 {
			break
		}
		if ids[0] == r.ID {
			w.db.cache.Put(r.ID, r.Rec)
		}
	}
	b.warmIDs = b.warmIDs[:0]
}

// release lets another load start (once).
func (w *loadWriter) release() {
	if w.released {
		return
	}
	w.released = true
	w.db.mu.Lock()
	w.db.loading = false
	w.db.mu.Unlock()
}
