package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/rocks"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// hexScale runs the scale workload on hexstate over RocksDB: the build with a
// StateLoader, the blocks as a chain of frames persisted every few blocks.
type hexScale struct {
	name     string
	shape    scaleShape
	grow     bool // build by inserts in random order (-build random), not a StateLoader
	store    *rocks.Store
	db       *trie.DB
	tip, cur *trie.Frame
	last     struct { // counters at the last Stats call
		rocks   rocks.BlockStats
		backend vertex.ReadStats
		cache   trie.CacheStats
		lookups trie.LookupStats
	}
}

func newHexScale(name, dir string, s scaleShape, cacheMB int, grow bool) (*hexScale, error) {
	cache := cacheMB << 20
	st, err := rocks.Open(filepath.Join(dir, name), rocksOptions(cache))
	if err != nil {
		return nil, fmt.Errorf("%s: rocks: %w", name, err)
	}
	db, err := trie.Open(st, hexOptions(name, cacheMB))
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("%s: open: %w", name, err)
	}
	return &hexScale{name: name, shape: s, store: st, db: db, grow: grow}, nil
}

func (h *hexScale) Name() string { return h.name }

// Build streams the accounts to a StateLoader in batches of about 100,000
// leaves (accounts plus slots) and commits the load as block 0; with grow it
// inserts them instead (growRandom).
func (h *hexScale) Build(idx *indexReader) (hashkey.Hash, error) {
	if h.grow {
		return h.growRandom()
	}
	l, err := h.db.NewStateLoader()
	if err != nil {
		return hashkey.Hash{}, fmt.Errorf("%s: loader: %w", h.name, err)
	}
	var batch []trie.AccountLeaf
	leaves := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := l.Add(batch)
		batch, leaves = nil, 0
		return err
	}
	for {
		hash, i, ok, err := idx.Next()
		if err != nil {
			l.Abort()
			return hashkey.Hash{}, err
		}
		if !ok {
			break
		}
		nonce, bal, code := h.shape.account(i)
		leaf := trie.AccountLeaf{AddrHash: hash, Account: trie.Account{Nonce: nonce, Balance: bal, CodeHash: code}}
		for _, sl := range sortedSlots(h.shape, i) {
			leaf.Storage = append(leaf.Storage, trie.SlotLeaf{Hash: sl.hash, Value: sl.val})
		}
		batch = append(batch, leaf)
		if leaves += 1 + len(leaf.Storage); leaves >= 100_000 {
			if err := flush(); err != nil {
				l.Abort()
				return hashkey.Hash{}, fmt.Errorf("%s: load: %w", h.name, err)
			}
		}
	}
	if err := flush(); err != nil {
		l.Abort()
		return hashkey.Hash{}, fmt.Errorf("%s: load: %w", h.name, err)
	}
	root, err := l.Commit(0)
	if err != nil {
		return root, fmt.Errorf("%s: commit load: %w", h.name, err)
	}
	h.tip = h.db.Begin()
	return root, nil
}

// growRandom builds the state as a block-by-block sync grows it: accounts
// inserted in index order (random in trie order) with their slots, in
// frames of about 100,000 leaves, each persisted as block 0, so that IDs are
// handed out in the order the keys arrive. The store is then compacted, as a
// StateLoader's build leaves it, so that only the ID order differs.
func (h *hexScale) growRandom() (hashkey.Hash, error) {
	fr, leaves := h.db.Begin(), 0
	for i := 0; i < h.shape.accounts; i++ {
		nonce, bal, code := h.shape.account(i)
		hash := h.shape.addrHash(i)
		if err := fr.UpdateAccount(hash, trie.Account{Nonce: nonce, Balance: bal, CodeHash: code}); err != nil {
			return hashkey.Hash{}, fmt.Errorf("%s: grow: %w", h.name, err)
		}
		for j := range h.shape.slotCount(i) {
			k, v := h.shape.slotKey(i, j), h.shape.slotValue(i, j)
			if err := fr.UpdateStorage(hash, hashkey.Keccak256(k[:]), &v); err != nil {
				return hashkey.Hash{}, fmt.Errorf("%s: grow: %w", h.name, err)
			}
			leaves++
		}
		if leaves++; leaves >= 100_000 || i == h.shape.accounts-1 {
			if err := h.db.Persist(fr, 0); err != nil {
				return hashkey.Hash{}, fmt.Errorf("%s: grow: %w", h.name, err)
			}
			fr, leaves = fr.Begin(), 0
		}
	}
	if err := h.db.Flush(); err != nil {
		return hashkey.Hash{}, fmt.Errorf("%s: grow: %w", h.name, err)
	}
	if err := h.store.Compact(); err != nil {
		return hashkey.Hash{}, fmt.Errorf("%s: grow: compact: %w", h.name, err)
	}
	h.tip = h.db.Begin()
	return h.db.StateRoot()
}

// VertexSSTBytes is the bytes of the SST files of the vertex records' column
// family (RocksDB's total-sst-files-size).
func (h *hexScale) VertexSSTBytes() uint64 {
	v, err := h.store.Property("rocksdb.total-sst-files-size")
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseUint(v, 10, 64)
	return n
}

// Open checks that the store is at block with root and starts on it.
func (h *hexScale) Open(block uint64, root hashkey.Hash) error {
	got, err := h.db.StateRoot()
	if err != nil {
		return fmt.Errorf("%s: state root: %w", h.name, err)
	}
	if h.db.Block() != block || got != root {
		return fmt.Errorf("%s: store is at block %d root %v, its state file says block %d root %v", h.name, h.db.Block(), got, block, root)
	}
	if buildLeafIndex && !h.db.HasLeafIndex() {
		start := time.Now()
		n, err := h.db.BuildLeafIndex(context.Background())
		if err != nil {
			return fmt.Errorf("%s: %w", h.name, err)
		}
		fmt.Printf("[%s] built the leaf index of the reused store: %d entries in %v\n", h.name, n, time.Since(start).Round(time.Millisecond))
	}
	if prefetchUpperLevels {
		start, before := time.Now(), h.db.BackendStats()
		if err := h.db.Begin().PrefetchUpperLevels(); err != nil {
			return fmt.Errorf("%s: %w", h.name, err)
		}
		reads := h.db.BackendStats().Records - before.Records
		fmt.Printf("[%s] prefetched the account trie's upper levels: %d records read, %d pinned, in %v\n",
			h.name, reads, h.db.CacheStats().Pinned, time.Since(start).Round(time.Millisecond))
	}
	fmt.Printf("[%s] leaf index: %v; prefetch: %s\n", h.name, h.db.HasLeafIndex(), prefetchMode)
	h.tip = h.db.Begin()
	h.Stats()
	return nil
}

// prefetchUpperLevels (flag -prefetch-upper-levels) makes Open read the
// account trie's upper branches into the vertex cache before the blocks.
var prefetchUpperLevels = true

// buildLeafIndex (flag -build-leaf-index) makes Open build the leaf index of
// a reused store written without one.
var buildLeafIndex = true

func (h *hexScale) Apply(b *scaleBlock) (readDigest, error) {
	h.cur = h.tip.Begin()
	fr := h.cur
	var d readDigest
	pf := startPrefetch(h.tip, b.prefetchKeys())
	for k := range b.accReads {
		a, _, err := fr.Account(b.accReads[k].hash)
		if err != nil {
			return d, fmt.Errorf("Account: %w", err)
		}
		d.account(a.Nonce, &a.Balance)
	}
	for k := range b.slotRead {
		op := &b.slotRead[k]
		v, err := fr.Storage(op.hash, op.slot)
		if err != nil {
			return d, fmt.Errorf("Storage: %w", err)
		}
		d.slot(&v)
	}
	for k := range b.accOps {
		op := &b.accOps[k]
		_, _, code := h.shape.account(int(op.idx))
		if err := fr.UpdateAccount(op.hash, trie.Account{Nonce: op.nonce, Balance: op.balance, CodeHash: code}); err != nil {
			return d, fmt.Errorf("UpdateAccount: %w", err)
		}
	}
	for k := range b.slotOps {
		op := &b.slotOps[k]
		if err := fr.UpdateStorage(op.hash, op.slot, &op.val); err != nil {
			return d, fmt.Errorf("UpdateStorage: %w", err)
		}
	}
	return d, pf.wait()
}

func (h *hexScale) Root() (hashkey.Hash, error) { return h.cur.StateRoot() }

func (h *hexScale) Persist(block uint64, commit bool) error {
	h.tip = h.cur
	if !commit {
		return nil
	}
	return h.db.Persist(h.cur, block)
}

func (h *hexScale) Stats() map[string]uint64 {
	out := map[string]uint64{}
	if rs, err := h.store.BlockStats(); err == nil {
		d := rs.Sub(h.last.rocks)
		h.last.rocks = rs
		out["rocks_data_block_reads"], out["rocks_data_block_hits"] = d.DataBlockReads, d.DataBlockHits
		out["rocks_file_reads"], out["rocks_file_read_bytes"] = d.FileReads, d.FileReadBytes
		out["rocks_index_block_reads"], out["rocks_filter_block_reads"] = d.IndexBlockReads, d.FilterBlockReads
	}
	b := h.db.BackendStats()
	out["backend_point_reads"] = b.PointReads - h.last.backend.PointReads
	out["backend_range_reads"] = b.RangeReads - h.last.backend.RangeReads
	out["backend_batch_reads"] = b.BatchReads - h.last.backend.BatchReads
	out["backend_batch_keys"] = b.BatchKeys - h.last.backend.BatchKeys
	out["backend_records"] = b.Records - h.last.backend.Records
	out["backend_leaf_reads"] = b.LeafReads - h.last.backend.LeafReads
	h.last.backend = b
	l := h.db.LookupStats()
	out["lookups"], out["cold_lookups"], out["cold_lookup_keys"] = l.Lookups-h.last.lookups.Lookups, l.Cold-h.last.lookups.Cold, l.ColdKeys-h.last.lookups.ColdKeys
	h.last.lookups = l
	c := h.db.CacheStats()
	out["cache_hits"] = uint64(c.Hits - h.last.cache.Hits)
	out["cache_misses"] = uint64(c.Misses - h.last.cache.Misses)
	out["cache_pinned"] = uint64(c.Pinned) // a level, not a count per block
	h.last.cache = c
	return out
}

func (h *hexScale) Close() error { return h.db.Close() }
