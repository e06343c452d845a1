package trie

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie/internal/nodeenc"
	"github.com/hexstate/hexstate/vertex"
)

// CopyOptions tunes DB.CopyFrom. The zero value is valid.
type CopyOptions struct {
	// Block is the block number the copy is committed at, normally the
	// source's (src.Block()). It follows Persist's rule on the target.
	Block uint64
	// Resume is the state an earlier, interrupted copy of the same source
	// into the same target handed to Checkpoint; nil starts a new copy.
	Resume []byte
	// CheckpointRecords is about how many records are written between two
	// calls of Checkpoint (default 1<<20).
	CheckpointRecords int
	// Checkpoint, when set, is called with a state to resume from once every
	// record the copy made before it is written to the target. A copy
	// interrupted after the call (a crash, a cancelled ctx) continues from
	// there when CopyFrom is called again with Resume set to that state.
	// An error from Checkpoint stops the copy.
	Checkpoint func(state []byte, p CopyProgress) error
	// Progress, when set, is called after every batch of records written.
	Progress func(CopyProgress)
	// PreloadBytes bounds the memory a copy may spend reading a source
	// whose IDs are scattered (one grown block by block, not laid out by
	// the builder) into memory before its walk, with sequential scans on
	// every core, instead of reading it vertex by vertex in trie order
	// (random reads there): about the source's records up to its
	// allocator's top, replaced ones included, plus 4 bytes per ID. A
	// source that does not fit, or is laid out by the builder, is read as
	// without it. Zero means DefaultPreloadBytes; a negative value turns
	// the preload off.
	PreloadBytes int
	// Method selects how the source is read: its trie walked (its records
	// and keys copied), or the target rebuilt from its leaf index (every
	// key computed, the root checked against the source's before the
	// commit); the default, CopyAuto, rebuilds only a scattered source
	// too large to preload (copy_rebuild.go).
	Method CopyMethod
	// Committed, when set, is called with the final progress once the copy
	// is committed (the target holds the copied state at its root and block,
	// readable and writable as after a Persist) and before CopyFrom compacts
	// the target into its final shape, which takes a while (for RocksDB,
	// about a third of a copy's time, on one thread). It is called on
	// CopyFrom's goroutine; the caller may go on with the target on another
	// one meanwhile (trie-migrate verifies it and copies the leaf index
	// during the compaction). CopyFrom returns after the compaction.
	Committed func(CopyProgress)
}

// CopyProgress reports how far a copy got.
type CopyProgress struct {
	Records  uint64        // records copied, this run and the runs it resumes: written, or held back to be written with the commit (a checkpoint carries them)
	Bytes    uint64        // bytes of records written by this run
	Fraction float64       // estimated share of the account trie done
	Elapsed  time.Duration // since this run started
	// KeysComputed counts the node keys this run computed (a Keccak-256,
	// or an embedded node's RLP): of branches whose records lack their own
	// key, and of children for a target that stores children's keys where
	// the source's records lack them. Between stores of one record variant
	// it stays 0 but for short branches, whose keys are never stored.
	KeysComputed uint64
	// ReadAhead counts the source records the walk took from its
	// read-ahead (records worker goroutines read in parallel before the
	// walk needed them) rather than reading them itself, and Scanned the
	// records those workers read by sequential scans of sub-tries' ID
	// intervals (one seek per sub-trie; a source written by the builder is
	// laid out so) rather than child by child.
	ReadAhead, Scanned uint64
	// Preloaded counts the source records read into memory by sequential
	// scans before the walk (CopyOptions.PreloadBytes); 0 when the source
	// did not fit.
	Preloaded uint64
	// Rebuilt says the target is being built from the source's leaf
	// index (CopyOptions.Method) rather than copied by a walk of its trie.
	Rebuilt bool
	// SourceScanned says the source is being copied by one sequential scan
	// of its IDs (CopyScan) rather than a walk of its trie.
	SourceScanned bool
}

// ErrCopy is wrapped by the errors of CopyFrom about its input: a target that
// is not empty, a resume state that does not fit, a source record that does
// not fit its trie.
var ErrCopy = errors.New("trie: copy")

// ErrCopyVersion (which wraps ErrCopy) is returned for a resume state
// written by an earlier version of the copy, which handed out the target's
// IDs in another order: it cannot be continued; remove the target and copy
// again.
var ErrCopyVersion = fmt.Errorf("%w: a resume state of an earlier version, whose IDs were handed out in another order (remove the target and copy again)", ErrCopy)

// Copy batches: a copy fills one while the other is being written, and cuts
// one at copyBatchRecords records or copyBatchBytes bytes.
const (
	copyBatchRecords = 1 << 16
	copyBatchBytes   = 16 << 20
)

// CopyFrom copies the persisted state of src into db, which must be empty
// (or hold what an interrupted copy with the same source wrote, when
// opts.Resume is set), in db's format, and returns the state root. Nothing
// is re-hashed: every vertex keeps its key and its children's keys; only the
// vertex IDs change. The records written are exactly those a StateLoader
// given the same accounts writes, IDs included (the same rules of
// build.Builder: see copier), so a copy is byte for byte the store the
// builder makes from the source's accounts.
//
// The source is walked in trie order, a branch's children read together (one
// range read over a v2 branch's 16 slots, clustered reads for v1), or, for a
// v1 source laid out by the builder copied into v2, read by one sequential
// scan of its IDs (CopyScan); the target's records are written in sorted
// batches behind the reads, on another goroutine. Memory does not grow with
// the state. src must not be written to during the copy. Nothing is visible
// in db before the final write, which also writes the admin record (root,
// block, allocator top): a copy that fails leaves db at its empty state (its
// records lie above the allocator's top, as a failed StateLoader's do).
//
// Where a source branch lacks its children's keys and db stores them, the
// missing keys are computed from the children (leaves hashed); where db stores
// none (Options.Records) they are dropped.
//
// A source whose IDs are scattered (grown block by block) and too large to
// read into memory first is instead rebuilt from its leaf index by default
// (opts.Method, copy_rebuild.go): the same records, every key computed, and
// the root compared with the source's before the commit.
func (db *DB) CopyFrom(ctx context.Context, src *DB, opts CopyOptions) (hashkey.Hash, error) {
	c, err := db.startCopy(src, &opts)
	if err != nil {
		return hashkey.Hash{}, err
	}
	defer c.w.release()
	defer c.direct.cursors.close()
	root, err := c.run(ctx)
	if err != nil {
		c.wait()
		return hashkey.Hash{}, err
	}
	return root, nil
}

// copier is one run of CopyFrom. The IDs it gives follow build.Builder's
// order (a v2 branch takes its 16 slots after its first child's sub-trie and
// before the rest; a v1 vertex takes its ID after its sub-trie; an account's
// storage trie takes its top ID, then its vertices' IDs, after the account's
// key is reached and before the next), so the walk must be in key order.
type copier struct {
	w       loadWriter // db's batches; no Persist may move its base
	db, src *DB
	opts    *CopyOptions
	alloc   vertex.Allocator
	enc     nodeenc.Encoder
	noChild bool
	want    hashkey.Hash  // the source's state root
	direct  copySource    // the walk's own reads of the source
	pre     *copyPrefetch // the read-ahead; nil when none
	stream  *copyStream   // the read-ahead of the sub-trie being walked, nil when none
	srcTop  vertex.ID     // the source's allocator top

	levels copyLevels  // per depth of the walk: children's records, output
	path   []copyFrame // the account trie's open branches (checkpoints)
	resume []copyFrame // frames still to restore on the walk's way down
	// resumeRebuild is the state an interrupted rebuild resumes from (the
	// next account's key, the account builder's state); nil when none.
	resumeRebuild []byte
	// scanState is the scan of a source laid out by the builder
	// (copy_scan.go), restored from a resume state or made by scan.
	scanState *copyScan
	startTop  vertex.ID // the target's allocator top when the copy began

	cpPending  []byte // checkpoint of the batch in flight, called after it
	records    uint64 // records emitted (resumed runs included)
	computed   uint64 // node keys computed (CopyProgress.KeysComputed)
	prefetched uint64 // records taken from the read-ahead (CopyProgress.ReadAhead)
	scanned    uint64 // the read-ahead's records scanned, once it has stopped (CopyProgress.Scanned)
	preloaded  uint64 // records read by the preload (CopyProgress.Preloaded)
	lastCP     uint64 // records at the last checkpoint
	rebuilding bool   // the target is rebuilt from the source's leaf index
	scanning   bool   // the source is copied by a scan of its IDs
	at         uint64 // a rebuild's position: the first 8 bytes of its last account's hash
	start      time.Time
	ctx        context.Context
	done       bool // committed
}

func (db *DB) startCopy(src *DB, opts *CopyOptions) (*copier, error) {
	if src == db {
		return nil, fmt.Errorf("%w: source and target are the same database", ErrCopy)
	}
	// The copy reads the source's backend and writes the target's itself:
	// neither may have a persist still being written.
	if err := src.Flush(); err != nil {
		return nil, fmt.Errorf("trie: copy: the source's pending persist: %w", err)
	}
	if err := db.Flush(); err != nil {
		return nil, err
	}
	want, err := src.StateRoot()
	if err != nil {
		return nil, err
	}
	src.mu.RLock()
	srcTop := src.base.alloc.Top
	src.mu.RUnlock()
	db.mu.Lock()
	defer db.mu.Unlock()
	if err := db.loadStartLocked(); err != nil {
		return nil, err
	}
	if err := db.checkBlockOrder(opts.Block); err != nil {
		return nil, fmt.Errorf("%w: commit block %d: %w", ErrCopy, opts.Block, err)
	}
	if err := db.base.checkEmpty(); err != nil {
		return nil, fmt.Errorf("%w: target: %w", ErrCopy, err)
	}
	c := &copier{db: db, src: src, opts: opts, alloc: db.base.alloc, noChild: db.noChild,
		want: want, srcTop: srcTop, start: time.Now(), path: make([]copyFrame, 0, maxCopyFrames)}
	c.startTop = c.alloc.Top
	if opts.Method < CopyAuto || opts.Method > CopyScan {
		return nil, fmt.Errorf("%w: unknown copy method %d", ErrCopy, opts.Method)
	}
	var held []vertex.Record
	if opts.Resume != nil {
		st, err := decodeCopyState(opts.Resume)
		if err != nil {
			return nil, err
		}
		if st.format != db.format || st.top < c.alloc.Top {
			return nil, fmt.Errorf("%w: resume state of format %v at ID %d does not fit a target of format %v at ID %d", ErrCopy, st.format, st.top, db.format, c.alloc.Top)
		}
		c.alloc.Top, c.records, c.lastCP, c.resume, c.resumeRebuild = st.top, st.records, st.records, st.frames, st.rebuild
		held = st.held
		if st.scan != nil {
			if c.scanState, err = decodeScanState(st.scan); err != nil {
				return nil, err
			}
		}
	}
	c.direct = newCopySource(src.backend, true)
	c.w = newLoadWriter(db, "copy", false)
	// The copy's IDs are handed out as a builder's are: it holds its
	// stragglers back as a StateLoader does, and a checkpoint carries them.
	c.w.hold, c.w.cut = true, c.alloc.Top
	for _, r := range held {
		c.w.holdRecord(r)
	}
	c.w.written = c.records - uint64(len(held))
	return c, nil
}

// run copies the source and commits.
func (c *copier) run(ctx context.Context) (hashkey.Hash, error) {
	c.ctx = ctx
	resumed := c.resume != nil || c.resumeRebuild != nil || c.scanState != nil
	switch {
	case c.want == hashkey.EmptyRoot && resumed:
		return hashkey.Hash{}, fmt.Errorf("%w: resume state for an empty source", ErrCopy)
	case c.want == hashkey.EmptyRoot:
		return c.commit()
	case c.scanState != nil && c.opts.Method != CopyAuto && c.opts.Method != CopyScan:
		return hashkey.Hash{}, fmt.Errorf("%w: the resume state is a scan's, which needs the method CopyScan or CopyAuto", ErrCopy)
	case c.scanState != nil:
		return c.scan(c.opts.Method == CopyAuto)
	case c.opts.Method == CopyScan && (resumed || !c.scanCopyable()):
		return hashkey.Hash{}, fmt.Errorf("%w: a scan needs a format-v1 source laid out by the builder, a format-v2 target and no walk or rebuild to resume", ErrCopy)
	case c.opts.Method == CopyScan:
		return c.scan(false)
	case c.opts.Method == CopyAuto && c.opts.Resume == nil && c.scanCopyable():
		return c.scan(true)
	}
	return c.readAndCopy()
}

// readAndCopy copies the source by a walk of its trie, or by a rebuild from
// its leaf index (startReads chooses), and commits.
func (c *copier) readAndCopy() (hashkey.Hash, error) {
	rebuild, err := c.startReads()
	if err != nil {
		return hashkey.Hash{}, err
	}
	if rebuild {
		return c.rebuild()
	}
	defer c.stopReads()
	rec, err := c.src.backend.Vertex(vertex.RootID)
	if err != nil {
		return hashkey.Hash{}, fmt.Errorf("trie: copy: reading the source's root: %w", err)
	}
	if rec == nil {
		return hashkey.Hash{}, fmt.Errorf("%w: the source's root vertex is missing", ErrCopy)
	}
	out, k, err := c.walk(0, vertex.RootID, rec, true, true)
	c.stopReads()
	if err != nil {
		return hashkey.Hash{}, err
	}
	if got := k.Hash(); got != c.want {
		return hashkey.Hash{}, fmt.Errorf("%w: the copied root's key %v is not the source's root %v", ErrCopy, got, c.want)
	}
	if err := c.emit(vertex.RootID, out); err != nil {
		return hashkey.Hash{}, err
	}
	return c.commit()
}

// startReads chooses how the source is read (opts.Method) and prepares
// the walk's reads: the whole source preloaded when it is scattered and
// fits opts.PreloadBytes (copy_preload.go), else the read-ahead's workers
// (copy_prefetch.go). It reports true, having started nothing, when the
// target is to be rebuilt from the source's leaf index instead.
func (c *copier) startReads() (rebuild bool, err error) {
	hasIndex := c.src.HasLeafIndex()
	canRebuild := c.opts.Resume == nil && hasIndex
	switch {
	case c.resumeRebuild != nil && (c.opts.Method == CopyWalk || !hasIndex):
		return false, fmt.Errorf("%w: the resume state is a rebuild's, which needs the source's leaf index and a method other than CopyWalk", ErrCopy)
	case c.resumeRebuild != nil:
		return true, nil
	case c.opts.Method == CopyRebuild && !canRebuild:
		return false, fmt.Errorf("%w: a rebuild needs a source with a leaf index and no walk to resume", ErrCopy)
	case c.opts.Method == CopyRebuild:
		return true, nil
	}
	budget := c.opts.PreloadBytes
	if budget == 0 {
		budget = DefaultPreloadBytes
	}
	scattered := !sourceLaidOut(c.src.backend, c.src.format, c.srcTop)
	if budget > 0 && scattered {
		c.direct.preload = preloadSource(c.src.backend, c.srcTop, budget, copyWorkers())
	}
	if c.direct.preload != nil {
		c.preloaded = c.direct.preload.records()
		return false, nil
	}
	if scattered && canRebuild && c.opts.Method == CopyAuto {
		return true, nil
	}
	c.pre = startPrefetch(c.src.backend, c.src.format, c.srcTop, copyWorkers(), c.resume)
	return false, nil
}

// stopReads ends what startReads started once the walk is over, and lets
// the preload's memory go before the commit.
func (c *copier) stopReads() {
	if c.pre != nil {
		c.pre.stop()
		c.scanned, c.pre = uint64(c.pre.scanned.Load()), nil
	}
	c.direct.preload = nil
}

// commit writes the last batch with the admin record, makes the copy the
// database's persisted state and compacts the target, as a StateLoader's
// Commit does; the final progress and opts.Committed come in between.
func (c *copier) commit() (hashkey.Hash, error) {
	if err := c.wait(); err != nil {
		return hashkey.Hash{}, err
	}
	err := c.w.commit(c.alloc, c.opts.Block, c.want, func() {
		c.done = true
		c.progress()
		if c.opts.Committed != nil {
			c.opts.Committed(c.report())
		}
	})
	if err != nil {
		return hashkey.Hash{}, err
	}
	return c.want, nil
}

// emit adds the record rec of target vertex id to the batch being filled,
// handing the batch to the writer when it is full.
func (c *copier) emit(id vertex.ID, rec []byte) error {
	b := c.w.cur
	start := len(b.buf)
	b.buf = append(b.buf, rec...)
	c.w.put(id, start)
	return c.emitted()
}

// emitVertex encodes the finished vertex v of target ID id into the batch
// being filled (a rebuild's builders hand their vertices here).
func (c *copier) emitVertex(id vertex.ID, v *vertex.Vertex) error {
	c.w.putVertex(id, v)
	c.computed++
	return c.emitted()
}

// emitted counts the record just put into the batch being filled and hands
// the batch to the writer when it is full.
func (c *copier) emitted() error {
	b := c.w.cur
	c.records++
	if len(b.batch.Puts) >= copyBatchRecords || len(b.buf) >= copyBatchBytes {
		return c.writeBehind(nil)
	}
	return nil
}

// safePoint is called where the copy could resume from (the walk: after a
// child of an account-trie branch in c.path; a rebuild: before an
// account): it checkpoints, with the resume state state returns, when
// enough records were written since the last checkpoint, and stops the
// copy when ctx is done.
func (c *copier) safePoint(state func() copyState) error {
	every := uint64(c.opts.CheckpointRecords)
	if every == 0 {
		every = 1 << 20
	}
	if c.opts.Checkpoint != nil && c.records-c.lastCP >= every {
		c.lastCP = c.records
		st := state()
		if err := c.writeBehind(&st); err != nil {
			return err
		}
	}
	if err := c.ctx.Err(); err != nil {
		return fmt.Errorf("trie: copy stopped after %d records: %w", c.records, err)
	}
	return nil
}

// walkState is the walk's resume state at a safe point.
func (c *copier) walkState() copyState {
	return copyState{format: c.db.format, top: c.alloc.Top, records: c.records, frames: c.path}
}

// writeBehind hands the batch being filled to the writer; st, when not nil,
// is the state whose checkpoint is handed to opts.Checkpoint once the batch
// is written. The records the writer holds back (loadWriter.hold) are not
// written by then: the checkpoint carries them.
func (c *copier) writeBehind(st *copyState) error {
	if err := c.wait(); err != nil {
		return err
	}
	if err := c.w.writeBehind(); err != nil {
		return err
	}
	if st != nil {
		st.held = c.w.held
		c.cpPending = st.encode()
	}
	return nil
}

// wait waits for the write in flight, if any, then reports its progress and
// hands its checkpoint on.
func (c *copier) wait() error {
	if c.w.inflight == nil {
		return nil
	}
	if err := c.w.wait(); err != nil {
		return err
	}
	c.progress()
	if cp := c.cpPending; cp != nil {
		c.cpPending = nil
		if err := c.opts.Checkpoint(cp, c.report()); err != nil {
			return fmt.Errorf("trie: copy: checkpoint: %w", err)
		}
	}
	return nil
}

func (c *copier) progress() {
	if c.opts.Progress != nil {
		c.opts.Progress(c.report())
	}
}

// report is the progress so far. The fraction is the position of the walk in
// the account trie, from the nibbles of its open branches' current children
// (addrHashes are uniform).
func (c *copier) report() CopyProgress {
	f, scale := 0.0, 1.0
	for i := range c.path {
		scale /= 16
		f += float64(c.path[i].nib) * scale
	}
	if c.rebuilding {
		f = float64(c.at) / (1 << 64)
	}
	if s := c.scanState; c.scanning && s != nil && c.srcTop > 0 {
		f = float64(s.next) / float64(c.srcTop)
	}
	if c.done {
		f = 1
	}
	scanned := c.scanned
	if c.pre != nil {
		scanned = uint64(c.pre.scanned.Load())
	}
	return CopyProgress{Records: c.w.written + uint64(len(c.w.held)), Bytes: c.w.bytes, Fraction: f, Elapsed: time.Since(c.start),
		KeysComputed: c.computed, ReadAhead: c.prefetched, Scanned: scanned, Preloaded: c.preloaded, Rebuilt: c.rebuilding,
		SourceScanned: c.scanning}
}
