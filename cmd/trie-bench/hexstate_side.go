package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/rocks"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// hexSide runs the workload on hexstate over RocksDB. Each block is a frame
// begun on the previous block's frame, so unpersisted blocks stack up the way
// they do in a client; every persistEvery blocks db.Persist writes the chain.
type hexSide struct {
	name   string
	format vertex.Format
	store  *rocks.Store
	db     *trie.DB
	tip    *trie.Frame // the last block's frame
	cur    *trie.Frame // the frame of the block in progress
	w      *workload
	before rocks.BlockStats
	stream bool              // build with a StateLoader
	loader *trie.StateLoader // the build's, when stream
}

func newHexSide(name string, f vertex.Format, dir string, cacheMB int, stream bool, w *workload) (*hexSide, error) {
	cache := cacheMB << 20
	st, err := rocks.Open(filepath.Join(dir, name), rocksOptions(cache))
	if err != nil {
		return nil, err
	}
	db, err := trie.Open(st, hexOptions(name, cacheMB))
	if err != nil {
		st.Close()
		return nil, err
	}
	return &hexSide{name: name, format: f, store: st, db: db, w: w, stream: stream}, nil
}

func (h *hexSide) Name() string { return h.name }

// BuildLoad loads the initial state: in one frame (BulkLoadAccounts), or
// streamed to the store by a StateLoader in chunks of 10,000 accounts.
func (h *hexSide) BuildLoad() error {
	leaves := h.w.leaves()
	if !h.stream {
		h.cur = h.db.Begin()
		return h.cur.BulkLoadAccounts(leaves)
	}
	l, err := h.db.NewStateLoader()
	if err != nil {
		return err
	}
	h.loader = l
	for len(leaves) > 0 {
		n := min(len(leaves), 10_000)
		if err := l.Add(leaves[:n]); err != nil {
			return err
		}
		leaves = leaves[n:]
	}
	return nil
}

// BuildRoot hashes the frame; a StateLoader commits (its root is known then).
func (h *hexSide) BuildRoot() (hashkey.Hash, error) {
	if h.loader != nil {
		return h.loader.Commit(0)
	}
	return h.cur.StateRoot()
}

func (h *hexSide) BuildPersist() error {
	if h.loader != nil { // committed by BuildRoot
		h.tip = h.db.Begin()
		return nil
	}
	if err := h.db.Persist(h.cur, 0); err != nil {
		return err
	}
	if err := h.db.Flush(); err != nil { // the build's time includes its write
		return err
	}
	h.tip = h.cur
	return nil
}

func (h *hexSide) Apply(b *wlBlock) error {
	h.cur = h.tip.Begin()
	tx := h.cur
	pf := startPrefetch(h.tip, h.prefetchKeys(b))
	for i := range b.accOps {
		op := &b.accOps[i]
		a := &h.w.accounts[op.idx]
		if err := tx.UpdateAccount(a.hash, trie.Account{Nonce: op.nonce, Balance: op.balance, CodeHash: a.code}); err != nil {
			return fmt.Errorf("UpdateAccount: %w", err)
		}
	}
	for i := range b.slotOps {
		op := &b.slotOps[i]
		if err := tx.UpdateStorage(h.w.accounts[op.idx].hash, op.slot, &op.val); err != nil {
			return fmt.Errorf("UpdateStorage: %w", err)
		}
	}
	return pf.wait()
}

func (h *hexSide) Root() (hashkey.Hash, error) { return h.cur.StateRoot() }

// rocksLowPriority (flag -rocks-low-priority) runs RocksDB's flushes and
// compactions at the lowest CPU priority (rocks.Options.LowPriorityBackground).
var rocksLowPriority bool

// rocksIngestBytes (flag -rocks-ingest-mb) is rocks.Options.IngestBytes: the
// batch size from which a write goes in as ingested SST files (0: the default,
// negative: never).
var rocksIngestBytes int64

// rocksBlockBytes (flag -rocks-block-kb) is rocks.Options.BlockSizeBytes (0:
// the default).
var rocksBlockBytes int

// rocksStats (flag -rocks-stats, default on) is rocks.Options.Statistics:
// the data blocks, index and filter blocks and file reads the read-path
// table reports. They cost a client's store CPU (~13 % of a 10M block,
// docs/benchmarks.md §10.16); off, those columns read 0.
var rocksStats = true

// rocksOptions are the options every hexstate store of a run is opened with:
// a block cache of cacheBytes, and the -rocks-* flags.
func rocksOptions(cacheBytes int) *rocks.Options {
	return &rocks.Options{
		Statistics:            rocksStats,
		BlockCacheBytes:       uint64(cacheBytes),
		BlockSizeBytes:        rocksBlockBytes,
		LowPriorityBackground: rocksLowPriority,
		IngestBytes:           rocksIngestBytes,
	}
}

// journalBlocks (flag -journal) journals every block's frame (trie DB.Journal)
// in the persist phase, before the block's Persist when it has one.
var journalBlocks bool

func (h *hexSide) Persist(block uint64, commit bool) error {
	h.tip = h.cur
	if journalBlocks {
		if err := h.db.Journal(h.cur, block); err != nil {
			return err
		}
	}
	if !commit {
		return nil
	}
	return h.db.Persist(h.cur, block)
}

func (h *hexSide) StatsStart() {
	h.before, _ = h.store.BlockStats()
}

func (h *hexSide) StatsLine() string {
	s, err := h.store.BlockStats()
	if err != nil {
		return "rocks stats: " + err.Error()
	}
	d := s.Sub(h.before)
	c := h.db.CacheStats()
	r := h.db.BackendStats()
	return fmt.Sprintf("rocks: data blocks read %d, hit %d, read %s; index/filter reads %d/%d; file reads %d (%s); filter-useful %d | vertex cache: hits %d, misses %d, %d entries (%s) | backend: point %d, range %d, batch %d (%d keys), records %d",
		d.DataBlockReads, d.DataBlockHits, fmtBytes(d.DataBlockBytes), d.IndexBlockReads, d.FilterBlockReads,
		d.FileReads, fmtBytes(d.FileReadBytes), d.FilterUseful, c.Hits, c.Misses, c.Entries, fmtBytes(uint64(c.Bytes)),
		r.PointReads, r.RangeReads, r.BatchReads, r.BatchKeys, r.Records)
}

// journalReopen (flag -journal-reopen) makes Close reopen the store and
// report how long trie.Open takes to replay the journal.
var journalReopen bool

// Close waits for the background writer (its time is not in any block's).
// With -journal-reopen it then reopens the store, timing the journal replay.
func (h *hexSide) Close() error {
	if err := h.db.Close(); err != nil || !journalReopen {
		return err
	}
	dir := h.store.Dir()
	start := time.Now()
	st, err := rocks.Open(dir, &rocks.Options{BlockCacheBytes: 256 << 20})
	if err != nil {
		return err
	}
	opened := time.Since(start)
	db, err := trie.Open(st, &trie.Options{Format: h.format})
	if err != nil {
		st.Close()
		return err
	}
	total := time.Since(start)
	rep, _ := db.JournalReport()
	fi, _ := os.Stat(rep.Path)
	var size int64
	if fi != nil {
		size = fi.Size()
	}
	fmt.Printf("%s: reopen with %d journalled frames (%s journal): %v (rocks.Open %v, trie.Open with replay %v)\n",
		h.name, rep.Replayed, fmtBytes(uint64(size)), total.Round(time.Millisecond), opened.Round(time.Millisecond), (total - opened).Round(time.Millisecond))
	return db.Close()
}
