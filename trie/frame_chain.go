package trie

import (
	"github.com/hexstate/hexstate/trie/internal/framestore"
	"github.com/hexstate/hexstate/vertex"
)

// ancestry answers, for a frame, which of the frames below it (down to the
// persisted base, whose store is always empty) holds a vertex ID. The zero
// ancestry says "none": a frame on the base. One with all set says "walk
// them": a frame replayed from the journal, which walks its frames below for
// every read rather than have Open index each of them (a frame begun on it
// indexes the chain).
type ancestry struct {
	chain *frameChain
	first vertex.ID // the lowest first fresh ID of the frames below; 0 when there are none
	all   bool
}

// frameChain is the index of one line of unpersisted frames: which of them
// (by seq) last changed each vertex ID. A frame begun on the line's newest
// indexed frame (tip) shares it, and Begin on that frame's child adds the
// child's changes: one index per line of frames, each frame's changes added
// once, when its first child begins (it is sealed then, and its keys are
// computed).
//
// A frame reads through the index only the entries of frames below it, those
// with a seq lower than its own. The index holds one line: every entry below
// a frame's seq is one of its ancestors' (a frame shares the index only when
// begun on its tip, and later frames all have higher seqs). A fork off an
// older frame starts an index of its own line, built from its frames.
type frameChain struct {
	index  *framestore.ChainIndex
	frames []*Frame // frames[seq-first]: the frames added, oldest first
	first  uint32   // seq of frames[0]
	tip    *Frame   // the newest frame added
}

// at returns the frame added at seq.
func (c *frameChain) at(seq uint32) *Frame { return c.frames[seq-c.first] }

// add indexes the changes of fr, the child of the tip (or the first frame).
//
// The versions fr's records supersede in the frames below are noted there
// (framestore.Store.Supersede), and a frame with enough of them noted is
// repacked without their children's keys: only the newest version of a
// branch is re-hashed on the line that fr extends, so an older version's
// keys serve no later hash there, and they are most of a packed frame's
// bytes (a branch near the root changes in every block, and each of 64
// frames would otherwise hold its 16 keys: docs/benchmarks.md §9, "Frame
// memory"). Any other read of an older version — a proof at that block, a
// fork begun on it, a sibling of fr that shares this index until its own
// child begins, a persist of the line's bottom that writes it — finds its
// own key and recomputes its children's keys when it needs them: a cost,
// never a wrong key. The repack runs on a goroutine of its own, beside the
// next block, and the next Begin puts its buffer in place (DB.finishPacks).
func (c *frameChain) add(fr *Frame) {
	if len(c.frames) == 0 {
		c.first = fr.seq
	}
	db := fr.db
	due := len(db.packing)
	framestore.Add(c.index, &fr.vtx, fr.seq, func(seq, rec uint32) {
		if f := c.at(seq); f.state == live && f.vtx.Supersede(rec) {
			db.packing = append(db.packing, f)
		}
	})
	for _, f := range db.packing[due:] { // once all of fr is noted
		f.vtx.StartRepack()
	}
	c.frames = append(c.frames, fr)
	c.tip = fr
}

// finishPacks puts in place the buffers of the packs (Frame.pack) and
// repacks (frameChain.add) in flight, and begins the next repack of a frame
// that noted enough superseded records meanwhile. A frame nothing can read
// any more is left alone: a folded one's store is the pending write's,
// which the writer reads without the lock, and a stale one's is garbage
// (the goroutine's buffer, and a first pack's encode buffer, are dropped
// with them). The caller holds db.mu exclusively.
func (db *DB) finishPacks() {
	keep := db.packing[:0]
	for _, f := range db.packing {
		if f.check(false) != nil {
			continue
		}
		again, scratch := f.vtx.Finish()
		if scratch != nil {
			db.packScratch = keepScratch(scratch)
		}
		f.dropVertices()
		if again {
			f.vtx.StartRepack()
			keep = append(keep, f)
		}
	}
	clear(db.packing[len(keep):])
	db.packing = keep
}

// ancestryOf returns the ancestry of a new frame on parent, whose store is
// complete (parent is sealed, or about to be, and its keys are computed). When
// parent is the child of its line's index tip, it adds parent's changes to
// that index (shared down the line); when a fork or a persist left that index
// to another line or mostly to persisted frames, it indexes parent's chain
// anew. Its caller, Begin, holds db.mu exclusively: adds never race with reads.
//
// Indexing a chain anew walks every frame's changes, all in one block's
// Begin; it happens once per persist interval (a new chain starts with one
// frame), at a fork, and when the frames persisted below a line outnumber
// the live ones (a client persisting the bottom of a long chain). A new index
// is sized for a quarter of the IDs the last one held (nextChainIDs) and
// grows ahead of need as its frames come; the one a persist asks for is
// made ahead, its pages in memory (db.chains, framestore.ChainPool), so
// that Begin takes no page fault per page of it.
//
// A vertex a sealed frame gains later (a hash of it that copies an inherited
// vertex into it to store its key) is not added: a read that misses it finds
// the same vertex below, without the key.
func ancestryOf(db *DB, parent *Frame) ancestry {
	if parent == nil || parent == db.base {
		return ancestry{}
	}
	if parent.check(false) != nil {
		return ancestry{all: true} // stale: its reads fail anyway; index nothing
	}
	a := ancestry{chain: parent.below.chain, first: parent.vtx.First()}
	if parent.below.chain != nil {
		a.first = min(a.first, parent.below.first)
	}
	c := a.chain
	live := int(parent.seq - db.base.seq) // unpersisted frames from parent down (parent descends from the base)
	switch {
	case c != nil && c.tip == parent:
		return a // a sibling was begun on parent before: it is indexed
	case c != nil && c.tip == parent.parent && len(c.frames) < 2*live:
		c.add(parent)
		db.lastChainIDs = c.index.Len()
		return a
	}
	var line []*Frame // parent first, down to (not including) the base
	n := 0
	a.first = parent.vtx.First() // of the live frames only: the folded ones' IDs are persisted
	for f := parent; f != nil && f != db.base; f = f.parent {
		line = append(line, f)
		n += f.vtx.Len()
		a.first = min(a.first, f.vtx.First()) // the frames' own: a replayed one has no chain
	}
	// The index's memory is freed once nothing reaches this line any more
	// (its frames folded or dropped and unreferenced, the pending write that
	// read it landed): a cleanup of the index's own.
	c = &frameChain{index: db.chains.Get(max(n, db.nextChainIDs()))}
	for i := len(line) - 1; i >= 0; i-- {
		c.add(line[i])
	}
	// parent's own reads may use the new index too (it holds parent's
	// ancestors below parent's seq), and so a second child begun on parent
	// shares it instead of indexing the chain again.
	parent.below.chain = c
	a.chain = c
	db.lastChainIDs = c.index.Len()
	return a
}

// nextChainIDs is how many IDs a new line's index is made for: a quarter of
// what the last line's held. A line begins right after a persist, while the
// persisted line's index still serves the pending write and the writer's
// batch is at its largest: the process's peak. The new line holds a few
// frames then, and its index grows ahead of need (framestore.ChainIndex) as
// more come, twice over a line like the last, each time on a goroutine of
// its own. Sized for the whole line, as it was, it added a full line's
// table to that peak (64 MiB at 10M accounts, docs/benchmarks.md §10.9).
// The caller holds db.mu.
func (db *DB) nextChainIDs() int { return db.lastChainIDs / 4 }

// chainAnswer is what an ancestry's index says of an ID (ancestry.find).
type chainAnswer int

const (
	chainWalk    chainAnswer = iota // it cannot say: ask the frames below in turn
	chainIndexed                    // the frame of the seq found changed it last, its record where rec says
	chainNone                       // no frame below holds it
)

// find asks a's chain index which frame below a frame of seq top last
// changed id. An index entry at or above top is a descendant's or a
// sibling's; an ID absent from the index but at or above the frames' first
// fresh ID may be a fresh ID of a frame below that no vertex holds (a
// deletion within its frame): for both it cannot say.
func (a *ancestry) find(id vertex.ID, top uint32) (seq, rec uint32, answer chainAnswer) {
	c := a.chain
	if c == nil {
		if a.all {
			return 0, 0, chainWalk
		}
		return 0, 0, chainNone
	}
	seq, rec, ok := c.index.Where(id)
	switch {
	case ok && seq < top:
		return seq, rec, chainIndexed
	case !ok && id < a.first:
		return 0, 0, chainNone
	}
	return 0, 0, chainWalk
}

// inChain returns vertex id as fr's frames hold it (nil: deleted) and
// whether they hold it at all (else the persisted state decides).
func (fr *Frame) inChain(id vertex.ID) (*node, bool) {
	if v, ok := fr.vtx.Lookup(id); ok {
		return v, true
	}
	switch seq, rec, answer := fr.below.find(id, fr.seq); answer {
	case chainIndexed:
		if f := fr.below.chain.at(seq); f.state == live {
			return f.vtx.LookupAt(id, rec)
		}
		return nil, false // persisted since: the base or the pending write has it
	case chainNone:
		return nil, false
	}
	for f := fr.parent; f != nil; f = f.parent {
		if v, ok := f.vtx.Lookup(id); ok {
			return v, true
		}
	}
	return nil, false
}
