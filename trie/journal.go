package trie

import (
	"errors"
	"fmt"
	"sync"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie/internal/journal"
	"github.com/hexstate/hexstate/vertex"
)

// The frame journal makes a block durable before it is persisted: DB.Journal
// appends the frame's changed vertex records to a log file of its own (not
// the backend, so that it outlives a cut of the backend's write-ahead log),
// one sequential write per block. Open replays the journal onto the persisted
// state the backend holds: every journalled frame that descends from it comes
// back, with the same root, as a sealed frame on the same parent (forks
// included). Once a persist has landed (and, with JournalSync, the backend is
// synced) the journal is trimmed to the frames above it. docs/format.md has
// the file's bytes, docs/integration.md the use.

// JournalBackend is implemented by a Backend that has a directory where the
// frame journal can live (rocks.Store returns its RocksDB directory, or ""
// when opened read-only). Options.JournalDir overrides it.
type JournalBackend interface {
	JournalDir() string
}

// SyncBackend is implemented by a Backend whose writes can be made durable
// against power loss after the fact (rocks.Store syncs its write-ahead log).
// With Options.JournalSync, the background writer syncs the backend before
// it trims journalled frames that a persist made redundant; a Backend without
// it is taken to be durable once Write returns.
type SyncBackend interface {
	Sync() error
}

var (
	// ErrNoJournal is returned by DB.Journal when the database has no
	// journal (no directory was given or offered, or Options.NoJournal).
	ErrNoJournal = errors.New("trie: the database has no frame journal")
	// ErrJournalGap is returned, wrapped, by DB.Journal for a frame whose
	// parent is neither the persisted base nor journalled: journal every
	// block, parents first.
	ErrJournalGap = errors.New("trie: the frame's parent is not journalled")
	// ErrJournalBlock is returned, wrapped, by DB.Journal for a frame
	// journalled before under another block number, and by DB.Persist for a
	// frame journalled under another block number than the one it is
	// persisted as (the journal links frames by block number and root).
	ErrJournalBlock = errors.New("trie: the frame was journalled under another block number")
	// ErrCorruptJournal is wrapped when the journal file is not a journal, an
	// entry that passed its checksum does not decode, or a replayed frame's
	// root differs from the one journalled. A torn tail (an entry cut short
	// by a crash or failing its checksum) is not an error: Open drops it.
	// Options.NoJournal opens the database without reading the journal.
	ErrCorruptJournal = journal.ErrCorrupt
)

// RecoveredFrame is a frame Open rebuilt from the journal.
type RecoveredFrame struct {
	Block uint64       // the block number it was journalled under
	Root  hashkey.Hash // its state root
	Frame *Frame       // sealed; begin the next block on it with Frame.Begin
}

// JournalReport says what Open found in the journal.
type JournalReport struct {
	Path         string // the journal file
	Entries      int    // entries read
	Replayed     int    // entries replayed (frames recovered)
	DroppedBytes int64  // bytes of a torn tail dropped
}

// dbJournal is the database's journal.
type dbJournal struct {
	log       *journal.Log
	sync      bool
	mu        sync.Mutex // serialises DB.Journal (taken before db.mu)
	recovered []RecoveredFrame
	report    JournalReport
	trimErr   error // the last trim's failure, returned by the next Journal
}

// journalDir returns the journal directory opts and b give, "" for none.
func journalDir(b Backend, opts *Options) string {
	if opts.NoJournal {
		return ""
	}
	if opts.JournalDir != "" {
		return opts.JournalDir
	}
	if jb, ok := b.(JournalBackend); ok {
		return jb.JournalDir()
	}
	return ""
}

// openJournal opens the journal, when there is one, and replays it.
func (db *DB) openJournal(b Backend, opts *Options) error {
	dir := journalDir(b, opts)
	if dir == "" {
		return nil
	}
	log, entries, rep, err := journal.Open(dir, opts.JournalSync)
	if err != nil {
		return fmt.Errorf("trie: opening the frame journal: %w", err)
	}
	db.jnl = &dbJournal{log: log, sync: opts.JournalSync,
		report: JournalReport{Path: log.Path(), Entries: rep.Entries, DroppedBytes: rep.DroppedBytes}}
	if err := db.replay(entries); err != nil {
		log.Close()
		return fmt.Errorf("trie: replaying the frame journal %s: %w", log.Path(), err)
	}
	db.jnl.report.Replayed = len(db.jnl.recovered)
	return nil
}

// baseKey is the journal key of the persisted base. The caller holds db.mu.
func (db *DB) baseKey() journal.Key {
	return journal.Key{Block: db.block, Root: db.root, Top: db.base.alloc.Top}
}

// replay rebuilds the journalled frames that descend from the persisted base,
// parents before children. Decoding the records is most of a replay's work
// and needs nothing of an entry's parent, so it runs first, on the
// database's workers; the frames are then built and checked in order.
func (db *DB) replay(entries []journal.Entry) error {
	base := db.baseKey()
	order := replayOrder(entries, base)
	decoded := make([]decodedEntry, len(order))
	forEach(len(order), db.bulkWorkers(), func(i int) { decoded[i] = db.decodeEntry(&entries[order[i]]) })
	frames := map[journal.Key]*Frame{base: db.base}
	for i, ei := range order {
		e := &entries[ei]
		fr, err := db.replayEntry(frames[e.Parent], e, &decoded[i])
		if err != nil {
			return err
		}
		decoded[i] = decodedEntry{} // the frame's now
		frames[e.Key] = fr
		db.jnl.recovered = append(db.jnl.recovered, RecoveredFrame{Block: e.Key.Block, Root: e.Key.Root, Frame: fr})
	}
	return nil
}

// replayOrder returns the positions of the entries that descend from base,
// parents before children, each key once (an entry journalled twice is
// replayed once).
func replayOrder(entries []journal.Entry, base journal.Key) []int {
	children := make(map[journal.Key][]int)
	for i := range entries {
		children[entries[i].Parent] = append(children[entries[i].Parent], i)
	}
	seen := map[journal.Key]bool{base: true}
	var order []int
	queue := []journal.Key{base}
	for len(queue) > 0 {
		k := queue[0]
		queue = queue[1:]
		for _, i := range children[k] {
			if e := &entries[i]; !seen[e.Key] {
				seen[e.Key] = true
				order = append(order, i)
				queue = append(queue, e.Key)
			}
		}
	}
	return order
}

// decodedEntry is an entry's records decoded, in the order of its Puts, or
// the error of the first that would not decode.
type decodedEntry struct {
	nodes []*node
	err   error
}

// decodeEntry decodes e's records, into one slab of nodes (the frame keeps
// them all as long as it lives).
func (db *DB) decodeEntry(e *journal.Entry) decodedEntry {
	d := decodedEntry{nodes: make([]*node, len(e.Puts))}
	slab := make([]nodeRoom, len(e.Puts))
	for i, r := range e.Puts {
		v, err := db.decodeBelowInto(&slab[i], r.ID, r.Rec, e.Key.Top)
		if err != nil {
			return decodedEntry{err: err}
		}
		v.private = false // the frame's now, read by its children: never theirs to take
		d.nodes[i] = v
	}
	return d
}

// replayEntry rebuilds e's frame on parent from its decoded records d and
// checks its root.
func (db *DB) replayEntry(parent *Frame, e *journal.Entry, d *decodedEntry) (*Frame, error) {
	if e.Key.Top < parent.alloc.Top {
		return nil, fmt.Errorf("%w: block %d: allocator top %d below its parent's %d", ErrCorruptJournal, e.Key.Block, e.Key.Top, parent.alloc.Top)
	}
	if d.err != nil {
		return nil, fmt.Errorf("%w: block %d: %w", ErrCorruptJournal, e.Key.Block, d.err)
	}
	fr := newFrame(db, parent, parent.alloc)
	if fresh := int(e.Key.Top - parent.alloc.Top); fresh > 0 && fresh <= 4*len(e.Puts)+64 {
		fr.vtx.Reserve(fresh)
	}
	for i, r := range e.Puts {
		fr.vtx.Set(r.ID, d.nodes[i])
	}
	for _, id := range e.Deletes {
		fr.vtx.Set(id, nil)
	}
	fr.alloc.Top = e.Key.Top
	fr.removed.all = true // an entry holds records only: which leaves went is not known
	root, err := fr.hash()
	if err != nil {
		return nil, fmt.Errorf("%w: block %d: hashing: %w", ErrCorruptJournal, e.Key.Block, err)
	}
	if root != e.Key.Root {
		return nil, fmt.Errorf("%w: block %d: replayed frame has root %v, journalled %v", ErrCorruptJournal, e.Key.Block, root, e.Key.Root)
	}
	parent.sealed = true
	fr.sealed, fr.journaled, fr.jkey = true, true, e.Key
	return fr, nil
}

// Journal appends fr, the state of block block, to the frame journal, so that
// a crash before fr is persisted does not lose it: the next Open rebuilds it
// (see Recovered). It returns once the entry is written (and fsynced, with
// Options.JournalSync). Journal every block in order: fr's parent must be the
// persisted base or journalled (else ErrJournalGap). A frame journalled again
// under the same block is a no-op (another block: ErrJournalBlock). Journal
// hashes fr first; fr stays writable, but an entry holds the frame as it was
// when journalled, so journal a block once it is complete.
//
// When fr's parent is a base whose background write has not landed and that
// was not journalled itself, Journal first waits for the write (Flush), so
// that the entry's parent is durable.
//
// Journal of the persisted base itself does nothing but wait for its write.
// Errors: ErrNoJournal, ErrNilFrame, ErrForeignFrame, ErrStale, ErrClosed, a
// file error; a failed trim of the journal by the background writer is
// returned (once) by the next Journal.
func (db *DB) Journal(fr *Frame, block uint64) error {
	if fr == nil || fr.db == nil {
		return fmt.Errorf("trie: journal block %d: %w", block, ErrNilFrame)
	}
	if fr.db != db {
		return fmt.Errorf("trie: journal block %d: %w", block, ErrForeignFrame)
	}
	j := db.jnl
	if j == nil {
		return fmt.Errorf("trie: journal block %d: %w", block, ErrNoJournal)
	}
	for attempt := 0; ; attempt++ {
		if _, err := fr.lockedHash(); err != nil {
			return fmt.Errorf("trie: journal block %d: %w", block, err)
		}
		e, wait, err := db.journalEntry(fr, block)
		if err != nil || e == nil && !wait {
			return err
		}
		if wait {
			if err := db.Flush(); err != nil {
				return fmt.Errorf("trie: journal block %d: waiting for the persisted parent: %w", block, err)
			}
			if attempt > 2 {
				return fmt.Errorf("trie: journal block %d: the base keeps moving", block)
			}
			continue
		}
		return db.appendEntry(fr, e)
	}
}

// journalEntry encodes fr's entry; wait means Flush first, nil entry and
// nothing to wait for means there is nothing to journal.
func (db *DB) journalEntry(fr *Frame, block uint64) (e *journal.Entry, wait bool, err error) {
	if err := fr.enter(useRead, "journal"); err != nil {
		return nil, false, err
	}
	defer fr.leave(useRead)
	if fr.journaled {
		if fr.jkey.Block != block {
			return nil, false, fmt.Errorf("trie: journal block %d: %w: it was journalled as block %d", block, ErrJournalBlock, fr.jkey.Block)
		}
		return nil, false, nil
	}
	if fr == db.base {
		return nil, db.pending != nil, nil // persisted already: wait for the write
	}
	var parent journal.Key
	switch p := fr.parent; {
	case p == db.base:
		if db.pending != nil && !p.journaled {
			return nil, true, nil
		}
		parent = db.baseKey()
	case p.journaled:
		parent = p.jkey
	default:
		return nil, false, fmt.Errorf("trie: journal block %d: %w", block, ErrJournalGap)
	}
	rv, err := fr.get(vertex.RootID)
	if err != nil {
		return nil, false, fmt.Errorf("trie: journal block %d: %w", block, err)
	}
	root := hashkey.EmptyRoot
	if rv != nil {
		if rv.Key.IsVoid() {
			return nil, false, fmt.Errorf("trie: journal block %d: %w", block, ErrConcurrentWrite) // written since hashed
		}
		root = rv.Key.Hash()
	}
	e = &journal.Entry{Key: journal.Key{Block: block, Root: root, Top: fr.alloc.Top}, Parent: parent}
	// Without children's keys: they make most of a branch record's bytes,
	// and a frame recovered after a crash can afford to re-read a branch's
	// children the first time it is re-hashed.
	e.Puts, e.Deletes = encodeChanges(fr.vtx.Each, make([]vertex.Record, 0, fr.vtx.Len()), heapRoom, false)
	return e, false, nil
}

// appendEntry writes e and marks fr journalled.
func (db *DB) appendEntry(fr *Frame, e *journal.Entry) error {
	j := db.jnl
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.trimErr; err != nil {
		j.trimErr = nil
		return fmt.Errorf("trie: journal block %d: an earlier trim failed: %w", e.Key.Block, err)
	}
	db.mu.RLock()
	done := fr.journaled
	db.mu.RUnlock()
	if done {
		return nil // a concurrent Journal of the same frame won
	}
	if err := j.log.Append(e); err != nil {
		return fmt.Errorf("trie: journal block %d: %w", e.Key.Block, err)
	}
	db.mu.Lock()
	fr.journaled, fr.jkey = true, e.Key
	db.mu.Unlock()
	return nil
}

// trimJournal drops the journal's entries that the persist of state k made
// redundant (k's ancestors and abandoned forks), once the backend holds k
// durably. It runs in the background writer.
func (db *DB) trimJournal(k journal.Key) {
	j := db.jnl
	if j == nil {
		return
	}
	var err error
	if sb, ok := db.backend.(SyncBackend); ok && j.sync {
		err = sb.Sync()
	}
	if err == nil {
		err = j.log.Trim(k)
	}
	if err != nil {
		j.mu.Lock()
		j.trimErr = err
		j.mu.Unlock()
	}
}

// Recovered returns the frames Open rebuilt from the journal, parents before
// children, with the block numbers and roots they were journalled under. The
// list is fixed at Open: frames that later turned stale stay in it. A frame
// whose chain is persisted again is persisted by DB.Persist as usual.
func (db *DB) Recovered() []RecoveredFrame {
	if db.jnl == nil {
		return nil
	}
	return append([]RecoveredFrame(nil), db.jnl.recovered...)
}

// RecoveredFrame returns the recovered frame of block with state root root, or
// nil when the journal had none.
func (db *DB) RecoveredFrame(block uint64, root hashkey.Hash) *Frame {
	if db.jnl == nil {
		return nil
	}
	for _, r := range db.jnl.recovered {
		if r.Block == block && r.Root == root {
			return r.Frame
		}
	}
	return nil
}

// JournalReport says what Open found in the journal; ok is false when the
// database has no journal.
func (db *DB) JournalReport() (rep JournalReport, ok bool) {
	if db.jnl == nil {
		return JournalReport{}, false
	}
	return db.jnl.report, true
}

// JournalFile is the frame journal's file name in its directory.
const JournalFile = journal.FileName

// PendingJournal reads the frame journal in dir without changing it and
// returns the block numbers of the frames it holds above db's persisted
// state: those a read-write Open would recover, and a copy of the persisted
// state (DB.CopyFrom) would leave behind. A database opened on a read-only
// store reads no journal (rocks.Store offers no journal directory then), so
// a tool that copies one, as trie-migrate does, asks this first. No journal
// file means none; a file that is not a journal is an error wrapping
// ErrCorruptJournal.
func (db *DB) PendingJournal(dir string) ([]uint64, error) {
	db.mu.RLock()
	base := db.baseKey()
	db.mu.RUnlock()
	keys, err := journal.Pending(dir, base)
	if err != nil {
		return nil, fmt.Errorf("trie: reading the frame journal in %s: %w", dir, err)
	}
	blocks := make([]uint64, len(keys))
	for i, k := range keys {
		blocks[i] = k.Block
	}
	return blocks, nil
}
