package trie

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/internal/manual"
	"github.com/hexstate/hexstate/trie/internal/journal"
	"github.com/hexstate/hexstate/vertex"
)

// This file is the background writer: Persist hashes the frames it persists,
// makes the persisted frame the new base at once, and hands the folded
// frames' vertex stores to a goroutine that merges and encodes them into one
// batch and writes it to the backend, so the caller goes on with the next
// block while the work runs.
//
// Until the write lands, those stores (a pendingWrite) are the newest layer
// of the persisted state: DB.load looks a vertex up in them before the cache
// and the backend, so frames on the new base read the persisted frames'
// vertices although those frames are folded. When the write lands the writer
// puts the batch's records into the cache, then (under db.mu) drops the
// pendingWrite: a reader never sees the old record of a vertex it changed.
//
// The batch refers to the stores' packed records where it writes them as
// they are (a leaf's, a branch's without children's keys; and the cache's
// records with them) instead of copying them, so the stores are freed only
// once the write has landed and the cache has copied them (Store.Release):
// at 10M accounts a 64-block persist's records are ~270 MB, and holding a
// copy of them beside the stores cost ~150 MiB of the persist's peak RSS
// (docs/benchmarks.md §10.5).
//
// One write is pending at a time: a Persist waits for the previous write
// (back-pressure: memory holds at most one encoded batch besides the frames).
// A failed write stays pending, readable and retryable: the next Persist,
// Flush or Close returns its error, and the call after that (or Close) writes
// it again.

// pendingWrite is a persist whose batch has not landed in the backend yet.
type pendingWrite struct {
	stores []vertexStore // the folded frames' changes, newest first
	below  ancestry      // the newest frame's: what stores[1:] may hold
	seq    uint32        // the newest frame's seq: stores[i] is the frame of seq-i
	block  uint64
	root   hashkey.Hash
	top    vertex.ID
	key    journal.Key // the persisted state's journal key
	// batch is encoded by the writer and kept for a retry; its records are
	// the arena's or the stores' (see encodeChanges), so the stores live as
	// long as it does.
	batch *vertex.Batch
	// removed says where the folded frames may have removed state leaves.
	removed removals
}

// lookup returns the newest version of id in the persisted frames (nil:
// deleted) and whether they hold one. The stores are no longer written, so
// lookups may run beside the writer's encoding and write. The caller holds
// db.mu.
func (p *pendingWrite) lookup(id vertex.ID) (*node, bool) {
	if i, rec := p.storeOf(id); i >= 0 {
		return p.stores[i].LookupAt(id, rec)
	}
	return nil, false
}

// storeOf returns the index of the newest of p's stores that holds id, or
// -1, without decoding a packed store's record, and where the frames' chain
// index says that store keeps id's record (0: it does not say). Below the
// newest store it asks the chain index, as Frame.inChain does, rather than
// each of up to 64 stores in turn: a block reads every persisted vertex
// through here while the write is pending.
func (p *pendingWrite) storeOf(id vertex.ID) (int, uint32) {
	if p.stores[0].Holds(id) {
		return 0, 0
	}
	switch seq, rec, answer := p.below.find(id, p.seq); answer {
	case chainIndexed:
		i := int(p.seq - seq)
		if i >= len(p.stores) {
			return -1, 0 // last changed by a frame persisted before
		}
		if p.stores[i].Holds(id) {
			return i, rec
		}
		// An index that does not name the store (not this line's): walk.
	case chainNone:
		return -1, 0
	}
	for i := 1; i < len(p.stores); i++ {
		if p.stores[i].Holds(id) {
			return i, 0
		}
	}
	return -1, 0
}

// encode merges the stores' changes into one batch with the admin record and,
// when the database has a leaf index, the index's changes, giving way to the
// blocks through the writer's pace.
//
// With keys once (db.noChild) the batch's branch records keep the children's
// keys their last hash left in memory and the backend strips them
// (vertex.Batch.StripChildKeys): the store gets each key once, but the cache,
// which takes the batch's records when the write lands, keeps what the next
// re-hash of a branch written now — a branch near the root is re-hashed in
// nearly every block — would otherwise read its children for
// (docs/design.md "Each key once"). A packed frame's record is that record
// already and is referred to, not copied.
func (db *DB) encode(p *pendingWrite, pace *pacer) (*vertex.Batch, error) {
	a := admin{format: db.format, records: db.records, top: p.top, block: p.block, root: p.root}
	batch := &vertex.Batch{Admin: a.encode(), StripChildKeys: db.noChild}
	changes, free := chainChanges(p.stores, pace)
	defer free()
	// The batch's slices live in the arena, outside the heap, as the records
	// they point to do: the collections that run beside the writer would
	// otherwise scan them (docs/design.md §7, "The writer's slices").
	batch.Puts, batch.Deletes = encodeChanges(func(yield func(vertex.ID, *node, []byte)) {
		for i := range changes {
			v, rec := changes[i].version(p.stores)
			yield(changes[i].id, v, rec)
			pace.tick()
		}
	}, manual.Slice[vertex.Record](db.arena, len(changes)), db.arena.Buffer, true)
	if db.leafIdx {
		var err error
		if batch.Leaves, batch.LeafPrefixDeletes, err = db.leafChanges(changes, p.stores, &p.removed, pace); err != nil {
			return nil, fmt.Errorf("leaf index: %w", err)
		}
	}
	return batch, nil
}

// encodeChanges encodes the changes each yields (a vertex, or a packed
// frame's record; neither: the ID is deleted) into buffers from room (each
// with room for at least the bytes asked for, as manual.Arena.Buffer), and
// appends the records to puts (with room for them all, where the caller
// knows how many). For a persist's batch (shared) the records keep the
// children's keys the vertices know and a packed record is referred to, not
// copied: the records are then valid as long as the records each yielded
// (the pending write keeps its stores until the write lands). For a journal
// entry (not shared) they are encoded without children's keys.
func encodeChanges(each func(yield func(vertex.ID, *node, []byte)), puts []vertex.Record, room func(n int) []byte, shared bool) ([]vertex.Record, []vertex.ID) {
	r := recordRoom{room: room}
	var deletes []vertex.ID
	each(func(id vertex.ID, v *node, rec []byte) {
		switch {
		case rec != nil && shared:
			puts = append(puts, vertex.Record{ID: id, Rec: rec})
		case rec != nil:
			puts = append(puts, vertex.Record{ID: id, Rec: r.keep(vertex.AppendWithoutChildKeys(r.next(), rec))})
		case v != nil:
			puts = append(puts, vertex.Record{ID: id, Rec: r.keep(v.encode(r.next(), shared))})
		default:
			deletes = append(deletes, id)
		}
	})
	return puts, deletes
}

// recordRoom is where the writer encodes records and the leaf index's
// entries: buffers from room, with at least maxRecord bytes free before each
// piece. Every piece it keeps is in room's memory, one larger than the room
// left included: the lists that point to them may live where the collector
// does not look (manual.Slice), so a piece must never be left in a heap array
// that only they refer to.
type recordRoom struct {
	room func(n int) []byte
	buf  []byte
}

// maxRecord is the room made before encoding a record: more than a state
// vertex's record takes (a branch with its key and all its children's keys
// is under 600 bytes).
const maxRecord = 1024

// next returns empty room to append the next piece to.
func (r *recordRoom) next() []byte {
	if cap(r.buf)-len(r.buf) < maxRecord {
		r.buf = r.room(maxRecord)
	}
	return r.buf[len(r.buf):]
}

// keep keeps a, a piece appended to what next returned, and returns it.
func (r *recordRoom) keep(a []byte) []byte {
	n := len(a)
	if cap(a) != cap(r.buf)-len(r.buf) {
		// Larger than the room left: the append moved it to the heap. Copy it
		// into room's memory, a buffer of its own.
		return append(r.room(n), a...)[:n:n]
	}
	r.buf = r.buf[:len(r.buf)+n]
	return a[:n:n]
}

// heapRoom is encodeChanges' room from the Go heap, in 64 KiB buffers: for
// records that do not live with a persist's batch (a journal entry's).
func heapRoom(n int) []byte { return make([]byte, 0, max(n, 64<<10)) }

// load is lookup returning a vertex of the caller's own, as from a record: a
// clone of the stores' version (a packed record's is decoded for the caller
// already).
func (p *pendingWrite) load(id vertex.ID) (*node, bool) {
	v, ok := p.lookup(id)
	if v != nil && !v.private { // a packed record's vertex is decoded for the caller already; a shared one (unpacked, or its pack in flight) is not
		v = v.clone()
	}
	return v, ok
}

// dropEncoded lets go of p's encoded batch, once nothing reads it: the
// write landed, or the database is closing.
func (p *pendingWrite) dropEncoded() { p.batch = nil }

// inPending reports whether a pending write holds a version of id. The caller
// holds db.mu.
func (db *DB) inPending(id vertex.ID) bool {
	p := db.pending
	if p == nil {
		return false
	}
	i, _ := p.storeOf(id)
	return i >= 0
}

// startWrite starts the writer goroutine on p. The caller holds db.mu
// exclusively and no writer is running.
func (db *DB) startWrite(p *pendingWrite) {
	done := make(chan struct{})
	db.writerDone = done
	go db.write(p, done)
}

// write writes p to the backend; on success it updates the cache, drops p
// (the backend now holds its state) and trims the journal up to it.
func (db *DB) write(p *pendingWrite, done chan struct{}) {
	defer close(done)
	var err error
	pace := pacer{busy: &db.hashing}
	if p.batch == nil {
		db.arena.Reset() // what an encode that failed left there
		var b *vertex.Batch
		if b, err = db.encode(p, &pace); err == nil {
			p.batch = b // the writer's alone: readers use the stores
		}
	}
	if err == nil {
		db.wmu.Lock()
		err = db.backend.Write(p.batch)
		db.wmu.Unlock()
	}
	if err != nil {
		db.mu.Lock()
		db.writeErr = fmt.Errorf("trie: persist block %d: %w", p.block, err)
		db.mu.Unlock()
		return
	}
	// p still shadows the cache for its IDs, so the cache can be brought up to
	// date before p is dropped, without holding db.mu.
	db.updateCache(p, &pace)
	db.leaves.landed(p.batch)
	db.mu.Lock()
	db.pending = nil
	db.stored = stored{block: p.block, root: p.root}
	db.mu.Unlock()
	// Nothing reads the stores or the batch's records now: readers reach
	// them only through db.pending, under db.mu, and the backend and the
	// cache copied them. The arena's memory is the next persist's (p let go
	// of first: nothing may point into a chunk Reset unmaps), and the
	// stores' packed records are freed now rather than at the next
	// collection, which a heap without them may not run for a while.
	p.dropEncoded()
	db.arena.Reset()
	for i := range p.stores {
		p.stores[i].Release()
	}
	db.trimJournal(p.key)
}

// cacheRun is how many records the writer hands the cache at a time: each
// shard's lock is then held for ~cacheRun/16 records, a fraction of a
// millisecond, before the writer yields.
const cacheRun = 4096

// updateCache refreshes the cached versions of the batch's records (with the
// children's keys the backend stripped, see encode) and drops the IDs it
// deleted, cacheRun at a time, yielding (pace) between runs. A record not
// cached is added only into room no cached record holds
// (reccache.Cache.Refresh says why).
func (db *DB) updateCache(p *pendingWrite, pace *pacer) {
	puts, dels := p.batch.Puts, p.batch.Deletes
	for len(puts) > 0 || len(dels) > 0 {
		run := puts[:min(cacheRun, len(puts))]
		puts = puts[len(run):]
		d := dels[:min(cacheRun-len(run), len(dels))]
		dels = dels[len(d):]
		db.cache.Refresh(run, d)
		pace.yield()
	}
}

// settle waits for the write in flight, if any. It returns the error of a
// failed write not yet returned by any call; a failed write already reported
// is written again (and its error returned if it fails again). The caller
// holds db.persistMu, not db.mu.
func (db *DB) settle() error {
	for {
		db.mu.Lock()
		if w := db.writerDone; w != nil {
			select {
			case <-w:
			default:
				db.mu.Unlock()
				<-w
				continue
			}
		}
		p := db.pending
		if p == nil {
			db.mu.Unlock()
			return nil
		}
		if err := db.writeErr; err != nil {
			db.writeErr = nil
			db.mu.Unlock()
			return err
		}
		if db.closed {
			db.mu.Unlock()
			return ErrClosed
		}
		db.startWrite(p) // a retry of a write that failed
		db.mu.Unlock()
	}
}

// Flush waits until the backend holds every persisted state: it returns when
// the pending persist's write (if any) has landed. If that write failed it
// returns the error (wrapping the backend's); calling Flush (or Persist) again
// writes the batch again. Reads are served throughout, from the pending frames
// until it lands.
func (db *DB) Flush() error {
	db.persistMu.Lock()
	defer db.persistMu.Unlock()
	return db.settle()
}

// stored is the state the backend holds: the last persist whose write landed.
type stored struct {
	block uint64
	root  hashkey.Hash
}

// Written reports the block and state root the backend holds (the last
// persist whose write has landed, or the state Open found) and whether a
// persist's write is pending (in flight, or failed and waiting for a retry by
// Flush, Persist or Close). Block and StateRoot report the newest persisted
// state whether or not its write has landed.
func (db *DB) Written() (block uint64, root hashkey.Hash, pending bool) {
	db.mu.RLock()
	defer db.mu.RUnlock()
	return db.stored.block, db.stored.root, db.pending != nil
}

// closeWriter waits for the writer before Close: a failed write is written
// once more, and its error returned if it fails again.
func (db *DB) closeWriter() error {
	if err := db.settle(); err == nil {
		return nil
	}
	return db.settle() // the retry
}

// pacer makes the background writer's long loops give their processor to
// waiting goroutines (the next blocks' apply and hashing) every 512 steps,
// about every 50-100 µs. Go has no goroutine priorities, and its scheduler
// lets a running goroutine keep a processor for 10 ms before preempting it:
// on a 2-core machine a block's goroutine would wait that long behind the
// writer, again and again (docs/benchmarks.md §9).
//
// It also stands aside while a block hashes on every core
// (hashChildrenParallel counts them in busy): then it sleeps, up to
// pacerWaitMax per step, so that the hashing has the cores to itself.
type pacer struct {
	n    uint32
	busy *atomic.Int32 // the database's parallel hashings in progress; nil: never waits
}

// pacerWaitMax bounds how long one step of the writer waits for a
// parallel hashing to end: the writer must still finish.
const pacerWaitMax = 20 * time.Millisecond

// tick counts a step and yields every 512th.
func (p *pacer) tick() {
	if p.n++; p.n%512 == 0 {
		p.yield()
	}
}

// yield gives the processor to waiting goroutines, and waits while a
// parallel hashing runs (up to pacerWaitMax).
func (p *pacer) yield() {
	if p.busy != nil && p.busy.Load() > 0 {
		for start := time.Now(); p.busy.Load() > 0 && time.Since(start) < pacerWaitMax; {
			time.Sleep(100 * time.Microsecond)
		}
		return
	}
	runtime.Gosched()
}
