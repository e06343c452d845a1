package trie

import (
	"cmp"
	"fmt"
	"slices"
	"unsafe"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/internal/manual"
	"github.com/hexstate/hexstate/trie/internal/framestore"
	"github.com/hexstate/hexstate/trie/internal/journal"
	"github.com/hexstate/hexstate/vertex"
)

// Persist makes fr the new persisted base and writes it and its unpersisted
// ancestors to the backend in one atomic batch (every changed vertex with its
// hash key, every deletion, and the admin record with the new root, block and
// allocator top). Frames on forks that do not descend from fr answer ErrStale
// from then on; frames begun on fr carry on. fr itself is sealed.
//
// The write runs in the background (see writer.go): Persist hashes fr, hands
// the frames to the writer (which merges, encodes and writes them) and
// returns, and the next blocks read the persisted frames' vertices from them
// until the write lands.
// Block and StateRoot report block and fr's root at once; Written reports what
// the backend holds; Flush waits for the write. One write is pending at a
// time: Persist first waits for the previous one. With Options.SyncPersist,
// Persist also waits for its own write.
//
// If a background write failed, the next Persist (or Flush, or Close) returns
// its error, wrapped, and does nothing else: the persisted frames stay
// readable, and calling Persist (or Flush) again writes
// the batch again. Persisting the base again under its own block only does
// that: it is how a caller retries a Persist whose write failed.
//
// block must be above the block the database is persisted at (else the error
// wraps ErrBlockOrder): block numbers only go forward. Block 0 is the one
// exception: it stands for "before any block" (a genesis, or a state loaded in
// several persists, as a migration does), so a database at block 0 accepts
// block 0 again. A frame journalled under another block number is refused
// (ErrJournalBlock). A nil frame (ErrNilFrame) or a frame of another database
// (ErrForeignFrame) is refused.
func (db *DB) Persist(fr *Frame, block uint64) error {
	if fr == nil || fr.db == nil {
		return fmt.Errorf("trie: persist block %d: %w", block, ErrNilFrame)
	}
	if fr.db != db {
		return fmt.Errorf("trie: persist block %d: %w", block, ErrForeignFrame)
	}
	db.persistMu.Lock()
	defer db.persistMu.Unlock()
	if err := db.settle(); err != nil {
		return err
	}
	built, err := db.persistLocked(fr, block)
	if err != nil {
		return err
	}
	if built { // a bulk load: the store is compacted once it is written
		if err := db.settle(); err != nil {
			return err
		}
		return db.compactBuilt(fmt.Sprintf("persist block %d", block))
	}
	if db.syncPersist {
		return db.settle()
	}
	return nil
}

// persistLocked is Persist once no write is pending: it takes db.mu, encodes
// the batch, moves the base and starts the writer. It reports whether a frame
// it persists was built by BulkLoadAccounts.
func (db *DB) persistLocked(fr *Frame, block uint64) (built bool, err error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if err := fr.check(false); err != nil {
		return false, err
	}
	var chain []*Frame // fr first, down to (not including) the base
	for f := fr; f != db.base; f = f.parent {
		if f == nil {
			return false, ErrStale // fr does not descend from the current base
		}
		chain = append(chain, f)
	}
	if len(chain) == 0 { // fr is the base already: a repeated Persist
		if block == db.block {
			return false, nil
		}
		return false, fmt.Errorf("trie: persist block %d: the frame is already persisted as block %d", block, db.block)
	}
	if err := db.checkBlockOrder(block); err != nil {
		return false, fmt.Errorf("trie: persist block %d: %w", block, err)
	}
	if fr.journaled && fr.jkey.Block != block {
		return false, fmt.Errorf("trie: persist block %d: %w: it was journalled as block %d", block, ErrJournalBlock, fr.jkey.Block)
	}
	root, err := fr.hash()
	if err != nil {
		return false, fmt.Errorf("trie: persist: hashing: %w", err)
	}
	if invariants {
		fr.assertInvariants(fmt.Sprintf("persisting block %d", block))
	}
	// The folded frames' vertex stores are the newest layer of the persisted
	// state until the write lands (writer.go): the writer merges and encodes
	// them; reads look them up meanwhile.
	p := &pendingWrite{block: block, root: root, top: fr.alloc.Top, below: fr.below, seq: fr.seq,
		key: journal.Key{Block: block, Root: root, Top: fr.alloc.Top}}
	// The packs in flight (Frame.pack, frameChain.add) are put in place
	// first, while no writer reads the frames' stores: a first pack's
	// encode buffer then comes back for the next block's pack (left to a
	// folded frame, it went with it, and the next pack grew a new one from
	// nothing, in fresh pages). The pack started at this block's Begin is
	// done by now.
	db.finishPacks()
	for _, f := range chain {
		p.stores = append(p.stores, f.vtx)
		p.removed.merge(&f.removed)
		built = built || f.built
	}
	for _, f := range chain[1:] {
		// A folded frame stays reachable from the index of its line
		// (frame_chain.go) until that line is indexed anew: drop what it held.
		f.state, f.vtx = folded, vertexStore{}
		f.arena, f.slab, f.accSlab, f.removed, f.h = nil, nil, nil, removals{}, hasher{fr: f}
	}
	db.base.state = folded
	fr.parent, fr.vtx, fr.sealed, fr.below = nil, newVertexStore(^vertex.ID(0)), true, ancestry{}
	db.base, db.block, db.root = fr, block, root
	db.pending = p
	db.startWrite(p)
	// The frame after the next begins a new line, whose index is sized from
	// the last one (ancestryOf): have its table ready, in memory.
	db.chains.Prepare(db.nextChainIDs())
	return built, nil
}

// checkBlockOrder returns an error wrapping ErrBlockOrder unless the state
// of block may replace the persisted one: block must be above db.block, or
// both are 0 ("before any block"). The caller holds db.mu.
func (db *DB) checkBlockOrder(block uint64) error {
	if block < db.block || (block == db.block && block != 0) {
		return fmt.Errorf("%w: the database is at block %d", ErrBlockOrder, db.block)
	}
	return nil
}

// change is the newest version of a vertex a persist writes, named by where
// it is: the store at position store of the persist's chain, and its Ref
// there. A change holds no Go pointer: a 64-block persist's list of them,
// and the radix sort's copy, live beside the blocks while the writer works,
// and the garbage collector does not scan them (design.md §14).
type change struct {
	id    vertex.ID
	store uint32
	ref   framestore.Ref
}

// version returns c's vertex, or its packed record (v nil); both nil: deleted.
func (c *change) version(chain []vertexStore) (v *node, rec []byte) {
	return chain[c.store].Change(c.id, c.ref)
}

// chainChanges returns the changes of the frames' vertex stores in chain
// (newest first), the newest version of each vertex, sorted by ID, and a
// func that frees them once the caller is done with them. Records go to the
// store in ID order: RocksDB's memtable takes sorted inserts faster than
// random ones (docs/benchmarks.md §5), and the encode buffer is then written
// front to back. It runs in the background writer, beside the next blocks:
// pace makes it give way to them (see pacer).
//
// The changes and the radix sort's second buffer are outside the Go heap
// (manual regions): a 64-block persist's are tens of megabytes, which on the
// heap would count twice towards the process's memory (the collector's goal
// is twice the live heap) while the writer works.
func chainChanges(chain []vertexStore, pace *pacer) (changes []change, free func()) {
	n := 0
	for i := range chain {
		n += chain[i].Len()
	}
	size := int(unsafe.Sizeof(change{}))
	a := manual.New(n * size)
	changes = manual.Typed[change](&a)[:0]
	for i := len(chain) - 1; i >= 0; i-- { // oldest frame first
		chain[i].EachRef(func(id vertex.ID, r framestore.Ref) {
			changes = append(changes, change{id, uint32(i), r})
			pace.tick()
		})
	}
	b := manual.New(len(changes) * size)
	sorted := sortChanges(changes, manual.Typed[change](&b), pace) // stable: an ID's versions stay oldest first
	keep, drop := &a, &b
	if len(sorted) > 0 && &sorted[0] != &changes[0] {
		keep, drop = &b, &a
	}
	drop.Free()
	out := sorted[:0]
	for i, c := range sorted {
		if i+1 < len(sorted) && sorted[i+1].id == c.id {
			continue // a newer frame changed it again
		}
		out = append(out, c)
	}
	return out, keep.Free
}

// sortChanges sorts cs by ID, stably, with a least-significant-digit radix
// sort (16-bit digits: two passes over IDs below 2^32), about ten times
// faster than a comparison sort of a 64-frame persist's million changes. It
// returns the sorted slice: cs, or the first len(cs) of scratch (which must
// hold as many).
func sortChanges(cs, scratch []change, pace *pacer) []change {
	var top vertex.ID
	for _, c := range cs {
		top = max(top, c.id)
	}
	if len(cs) < 256 {
		slices.SortStableFunc(cs, func(a, b change) int { return cmp.Compare(a.id, b.id) })
		return cs
	}
	src, dst := cs, scratch[:len(cs)]
	count := make([]int, 1<<16)
	for shift := uint(0); shift < 64 && top>>shift != 0; shift += 16 {
		clear(count)
		for _, c := range src {
			count[c.id>>shift&0xffff]++
		}
		at := 0
		for d, k := range count {
			count[d], at = at, at+k
		}
		for _, c := range src {
			d := c.id >> shift & 0xffff
			dst[count[d]] = c
			count[d]++
			pace.tick()
		}
		src, dst = dst, src
	}
	return src
}

// cacheKey caches key k (and for a branch its children's keys kids) that
// hashing found for the persisted vertex v at id, as the record a persist
// would write. Records store a key only for a branch whose key is a hash: for
// any other vertex there is nothing to cache.
func (db *DB) cacheKey(id vertex.ID, v *node, k hashkey.Key, kids vertex.ChildKeys) {
	if v.Kind != vertex.Branch || !k.IsHash() || db.inPending(id) {
		return // a pending write's version must not reach the cache before it lands
	}
	cp := *v
	cp.Key, cp.ChildKeys, cp.stale = k, kids, 0
	var buf [640]byte
	db.cache.Put(id, cp.encode(buf[:0], true))
}
