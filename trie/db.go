package trie

import (
	"errors"
	"fmt"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/internal/manual"
	"github.com/hexstate/hexstate/trie/internal/framestore"
	"github.com/hexstate/hexstate/trie/internal/reccache"
	"github.com/hexstate/hexstate/vertex"
)

// Options configures a DB. The zero value is valid.
type Options struct {
	// Format selects the layout of a new database and the layout an existing one
	// must have (0 means vertex.Latest). Opening a database of another format
	// fails with a *FormatError; trie-migrate converts it.
	Format vertex.Format
	// CacheBytes bounds the memory of the vertex record cache above the
	// backend, its index included (default 256 MiB).
	CacheBytes int
	// Workers is how many goroutines hash sub-tries, and build them in a bulk
	// load, in parallel (default GOMAXPROCS; 1 works serially). Results are
	// identical either way.
	Workers int
	// Records selects the record variant: whether branch records carry copies
	// of their children's keys (docs/format.md §4.5, docs/design.md "Each key
	// once"). 0 means the variant the admin record names, and for a new
	// database vertex.DefaultRecords (each hash key stored once). A variant
	// other than the one the admin record names fails with a *RecordsError
	// (trie-migrate converts). An admin record written before variants were
	// recorded names none: its database takes this variant, or
	// vertex.ChildKeyCopies for 0. Records of both variants are read whatever
	// this is set to.
	Records vertex.Records
	// SyncPersist makes Persist wait for its own write to land (and return its
	// error) instead of leaving it to the background writer.
	SyncPersist bool
	// JournalDir is the directory of the frame journal (file
	// "hexstate-journal", see DB.Journal). Empty means the backend's
	// JournalDir when it implements JournalBackend (rocks.Store does, so
	// journalling is on by default for RocksDB stores), else no journal.
	JournalDir string
	// NoJournal turns the journal off: Open neither reads nor writes it, and
	// DB.Journal returns ErrNoJournal.
	NoJournal bool
	// JournalSync makes DB.Journal fsync the journal before it returns (a
	// journalled block then survives power loss, not only a crash of the
	// process), and makes the background writer sync the backend (when it
	// implements SyncBackend) before it trims the journal.
	JournalSync bool
}

// DB is a persistent Merkle-Patricia state database on a Backend: the persisted
// base state plus a tree of in-memory frames (Frame) on top of it.
//
// The trie rooted at vertex.RootID is the state (account) trie, keyed by
// keccak(address); each account leaf refers to the root of its storage trie.
// Generic byte-keyed tries (transactions, receipts) are in-memory Tries.
type DB struct {
	mu sync.RWMutex // Persist, Close, Begin and Rollback write; reads read
	// persistMu serialises Persist, Flush and Close (each waits for the
	// background writer without holding mu); wmu serialises backend writes.
	persistMu, wmu sync.Mutex
	syncPersist    bool
	pending        *pendingWrite // the persist being written (or failed), nil when none
	arena          *manual.Arena // the writer's: the pending batch's records and leaf entries (writer.go)
	writerDone     chan struct{} // closed when the last writer goroutine has ended
	hashing        atomic.Int32  // parallel hashings in progress: the writer stands aside (pacer)
	writeErr       error         // a failed write's error, until a call returns it
	stored         stored        // the state the backend holds
	jnl            *dbJournal    // nil when journalling is off
	backend        Backend
	format         vertex.Format
	workers        int
	records        vertex.Records
	noChild        bool // records != vertex.ChildKeyCopies: branch records without children's keys
	leafIdx        bool // the backend's leaf index is complete: persists keep it, reads use it
	lookups        lookupCounters
	leaves         leafCache // index values read ahead by Prefetch
	cache          *reccache.Cache
	base           *Frame // the persisted state, as a frame with no changes
	block          uint64
	root           hashkey.Hash
	closed         bool
	loading        bool // a StateLoader is running
	// lastChainIDs is how many IDs the index of the frames below that Begin
	// last added to holds (under mu): a new chain's index is sized for as
	// many (see ancestryOf).
	lastChainIDs int
	// packScratch is the buffer Frame.pack encodes a frame's records in
	// (under mu) before copying them into one allocation of their size; a
	// pack in flight holds it until finishPacks takes it back.
	packScratch []byte
	// packing holds the frames whose stores are being packed or repacked
	// on goroutines of their own (Frame.pack, frameChain.add); the next
	// Begin puts the new buffers in place (finishPacks).
	packing []*Frame
	// chains makes the next line's index ahead, its pages in memory
	// (ancestryOf).
	chains *framestore.ChainPool
	// prefetchIdle is how many more hashes skip the batched prefetch
	// (prefetch.go).
	prefetchIdle atomic.Int32
}

// Open opens the database held by b, or creates one in an empty b. On success
// the DB owns b (DB.Close closes it); on failure b stays open and untouched, for
// the caller to inspect or close.
func Open(b Backend, opts *Options) (*DB, error) {
	if opts == nil {
		opts = &Options{}
	}
	want := opts.Format
	if want == 0 {
		want = vertex.Latest
	}
	if !want.Valid() {
		return nil, &FormatError{Want: want} // Found 0: nothing was read
	}
	rec, err := b.Admin()
	if err != nil {
		return nil, fmt.Errorf("trie: reading admin record: %w", err)
	}
	var found *admin
	a := admin{format: want, top: vertex.FirstFreeID - 1, root: hashkey.EmptyRoot}
	leafIdx := rec == nil // a new database starts with an empty, complete index
	if rec != nil {
		if a, err = decodeAdmin(rec); err != nil {
			return nil, err
		}
		if a.format != want {
			return nil, &FormatError{Found: a.format, Want: want}
		}
		found = &a
		if leafIdx, err = readLeafMarker(b); err != nil {
			return nil, err
		}
	}
	recs, err := recordsFor(found, opts.Records)
	if err != nil {
		return nil, err
	}
	if rec == nil {
		a.records = recs
		batch := &vertex.Batch{Admin: a.encode(), LeafReset: true,
			Leaves: []vertex.LeafEntry{{Key: leafMarkerKey, Val: leafMarkerValue}}}
		if err := b.Write(batch); err != nil {
			return nil, fmt.Errorf("trie: creating database: %w", err)
		}
	}
	db := &DB{
		backend: b,
		format:  a.format,
		workers: opts.Workers,
		records: recs,
		noChild: recs != vertex.ChildKeyCopies,
		leafIdx: leafIdx,
		cache:   reccache.New(cmpOr(opts.CacheBytes, 256<<20)),
		block:   a.block,
		root:    a.root,
		stored:  stored{block: a.block, root: a.root},

		syncPersist: opts.SyncPersist,
		chains:      new(framestore.ChainPool),
		arena:       new(manual.Arena),
	}
	runtime.AddCleanup(db, (*manual.Arena).Free, db.arena) // a DB dropped without Close
	db.base = newFrame(db, nil, vertex.Allocator{Top: a.top})
	db.base.sealed = true
	if err := db.checkRoot(); err != nil {
		return nil, err
	}
	if err := db.openJournal(b, opts); err != nil {
		return nil, err
	}
	return db, nil
}

func cmpOr(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// checkRoot verifies that the root vertex's key (read from its record, not
// recomputed, unless the root is a leaf or a branch under 32 bytes) matches the
// root in the admin record: a cheap check that the store is what admin says.
func (db *DB) checkRoot() error {
	got, err := db.base.hash()
	if err != nil {
		return fmt.Errorf("trie: reading the state root: %w", err)
	}
	if got != db.root {
		return fmt.Errorf("%w: root vertex hashes to %v, admin record says %v", ErrCorruptAdmin, got, db.root)
	}
	return nil
}

// Format is the database's on-disk layout.
func (db *DB) Format() vertex.Format { return db.format }

// Records is the database's record variant: whether branch records carry
// copies of their children's keys.
func (db *DB) Records() vertex.Records { return db.records }

// Block is the block number of the persisted state: the last block Persist
// accepted, whether or not its background write has landed (see Written).
func (db *DB) Block() uint64 {
	db.mu.RLock()
	defer db.mu.RUnlock()
	return db.block
}

// StateRoot returns the root of the persisted state, the state of Block
// (whose write may still be pending; see Written).
func (db *DB) StateRoot() (hashkey.Hash, error) {
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.closed {
		return hashkey.Hash{}, ErrClosed
	}
	return db.root, nil
}

// Begin starts a frame on the persisted base state.
func (db *DB) Begin() *Frame {
	db.mu.Lock()
	defer db.mu.Unlock()
	return newFrame(db, db.base, db.base.alloc)
}

// CacheStats reports the vertex cache's use.
type CacheStats struct {
	Hits, Misses uint64
	Entries      int
	// Pinned is how many of the entries are pinned: the account trie's
	// branches near the root that Prefetch read, kept when the cache's ring
	// comes round to them (at most half of it).
	Pinned int
	// Bytes is the record bytes the cache holds (including records that a
	// newer version replaced, until the ring overwrites them).
	Bytes int
	// Index is the bytes of the cache's index from ID to record: it grows
	// with the entries, up to an eighth of the budget.
	Index int
	// Budget is the configured bound on Bytes + Index (Options.CacheBytes).
	Budget int
	// Evicted is how many entries were dropped to make room for others:
	// zero while everything the cache was given has fitted.
	Evicted uint64
}

// CacheStats reports hits, misses and size of the vertex cache.
func (db *DB) CacheStats() CacheStats { return CacheStats(db.cache.Stats()) }

// BackendStats reports the reads the backend served.
func (db *DB) BackendStats() vertex.ReadStats { return db.backend.Stats() }

// Close waits for the background writer, closes the journal and closes the
// database and its backend. Frames answer ErrClosed afterwards. If the pending
// write failed, Close writes it once more; if that fails too, Close returns
// the error and closes anyway (journalled blocks are recovered from the
// journal at the next Open). Calling it again returns nil.
func (db *DB) Close() error {
	db.persistMu.Lock()
	defer db.persistMu.Unlock()
	db.mu.RLock()
	closed := db.closed
	db.mu.RUnlock()
	if closed {
		return nil
	}
	werr := db.closeWriter()
	db.mu.Lock()
	defer db.mu.Unlock()
	db.closed = true
	if p := db.pending; p != nil { // a write that failed again: nothing reads it now
		p.dropEncoded() // nothing may point into the freed arena
	}
	db.arena.Free()
	var jerr error
	if db.jnl != nil {
		jerr = db.jnl.log.Close()
	}
	return errors.Join(werr, jerr, db.backend.Close())
}

// load returns persisted vertex id (nil when absent), from the cache or the backend.
// Each call returns a vertex of its own, decoded from the cached or stored record.
func (db *DB) load(id vertex.ID) (*node, error) {
	if v, ok, err := db.loadWarm(id); ok || err != nil {
		return v, err
	}
	return db.loadStored(id)
}

// loadWarm is load when memory holds vertex id (a pending write, the cache):
// ok is false when only the backend may.
func (db *DB) loadWarm(id vertex.ID) (v *node, ok bool, err error) {
	if p := db.pending; p != nil {
		if v, ok := p.load(id); ok {
			return v, true, nil
		}
	}
	return db.loadCached(id)
}

// loadCached is load from the cache alone: ok is false when it does not
// hold id.
func (db *DB) loadCached(id vertex.ID) (v *node, ok bool, err error) {
	ok, err = db.cache.Get(id, func(rec []byte) (err error) {
		v, err = db.decode(id, rec)
		return err
	})
	return v, ok, err
}

// loadStored is load from the backend (and into the cache).
func (db *DB) loadStored(id vertex.ID) (*node, error) {
	v, rec, err := db.readStored(id)
	if v != nil {
		db.cache.Put(id, rec)
	}
	return v, err
}

// readStored reads and decodes vertex id from the backend (nil when absent),
// and returns its record too.
func (db *DB) readStored(id vertex.ID) (*node, []byte, error) {
	rec, err := db.backend.Vertex(id)
	if err != nil {
		return nil, nil, vertexError(id, err)
	}
	if rec == nil {
		return nil, nil, nil
	}
	v, err := db.decode(id, rec)
	if err != nil {
		return nil, nil, err
	}
	return v, rec, nil
}

// decode decodes the record of vertex id and checks that a branch has the
// database's layout (a v1 branch in a v2 database is corruption, not a variant).
func (db *DB) decode(id vertex.ID, rec []byte) (*node, error) {
	return db.decodeBelow(id, rec, db.base.alloc.Top)
}

// decodeBelow is decode for a record that may refer to IDs up to top.
func (db *DB) decodeBelow(id vertex.ID, rec []byte, top vertex.ID) (*node, error) {
	return db.decodeBelowInto(new(nodeRoom), id, rec, top)
}

// decodeBelowInto is decodeBelow into r.
func (db *DB) decodeBelowInto(r *nodeRoom, id vertex.ID, rec []byte, top vertex.ID) (*node, error) {
	v, err := r.decode(rec)
	if err != nil {
		return nil, vertexError(id, err)
	}
	if v.Kind == vertex.Branch && (v.Kids != nil) != (db.format == vertex.FormatV1) {
		return nil, vertexError(id, &vertex.CorruptError{Reason: fmt.Sprintf("branch record of another layout in a %v database", db.format)})
	}
	// Every ID a stored vertex refers to was allocated before it was persisted.
	ref := vertex.NoID
	switch {
	case v.Kids != nil:
		for _, k := range v.Kids {
			ref = max(ref, k)
		}
	case v.Kind == vertex.Branch:
		ref = v.Base + vertex.BranchSlots - 1
	case v.Acc != nil:
		ref = v.Acc.Storage
	}
	if ref > top {
		return nil, vertexError(id, &vertex.CorruptError{Reason: fmt.Sprintf("refers to ID %d, above the allocator's top %d", ref, top)})
	}
	return v, nil
}

// prefetchChildren loads the persisted children of a format-v2 branch in one
// batch when two or more of them are neither in fr's frames nor cached. (A
// format-v1 branch's children are scattered: they are read one by one.)
func (db *DB) prefetchChildren(fr *Frame, v *node) error {
	if v.Kids != nil || v.Used == 0 || v.Base >= fr.vtx.First() {
		return nil // v1, or slots allocated by fr itself: nothing of them is stored
	}
	missing := fr.storedSlots(v.Base, v.Used)
	if bits.OnesCount16(missing) < 2 {
		return nil
	}
	return db.readInto(readTask{first: v.Base, used: missing}, make([]vertex.ID, 0, vertex.BranchSlots))
}
