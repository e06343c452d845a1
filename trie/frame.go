package trie

import (
	"sync"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie/internal/framestore"
	"github.com/hexstate/hexstate/trie/internal/journal"
	"github.com/hexstate/hexstate/vertex"
)

// vertexStore holds the vertices one frame changed.
type vertexStore = framestore.Store[node]

func newVertexStore(first vertex.ID) vertexStore { return framestore.New[node](first) }

// frameState is where a frame stands in the frame tree.
type frameState uint8

const (
	live    frameState = iota // readable; writable unless sealed
	folded                    // its changes were persisted below a newer base: stale
	dropped                   // rolled back: stale
)

// A Frame is one block's changes on top of a parent frame (or of the persisted
// base). Frames form a tree, one per block, so forks can be kept side by side;
// reads fall through to the parent and then to the database. A frame holds only
// the vertices it changed, so its memory is proportional to its changes.
//
// Several goroutines may read one frame at once (reads include StateRoot and the
// proofs, which wait for each other), and different frames may be used
// concurrently. A write needs the frame to itself: a write that overlaps any
// other call on the same frame fails with ErrConcurrentWrite and changes
// nothing, and a read or hash that overlaps a write waits for it (see
// guard.go). A frame is sealed (read-only) once a child frame has begun on it
// or it has been persisted.
type Frame struct {
	db      *DB
	use     sync.RWMutex // see guard.go: shared by reads, exclusive for a write or a hash
	parent  *Frame
	vtx     vertexStore // the vertices this frame changed
	alloc   vertex.Allocator
	state   frameState
	sealed  bool
	h       hasher           // scratch for key computation (serial path)
	arena   []byte           // backing store for the nibble paths and values of new vertices
	slab    []node           // vertices handed out by newVertex
	accSlab []vertex.Account // accounts handed out by newAccount
	writes  int              // writes since the last hash, to choose parallel hashing
	built   bool             // BulkLoadAccounts built it: its Persist compacts the store
	removed removals         // where its writes may have removed state leaves (the leaf index's old walk)
	below   ancestry         // which frames below it (above the base) hold which IDs
	seq     uint32           // its position in its line of frames: its parent's plus one
	// journaled is set (under db.mu) once the frame's entry is in the journal,
	// under jkey (see journal.go).
	journaled bool
	jkey      journal.Key
}

func newFrame(db *DB, parent *Frame, alloc vertex.Allocator) *Frame {
	fr := &Frame{db: db, parent: parent, vtx: newVertexStore(alloc.Top + 1), alloc: alloc}
	if parent != nil {
		fr.seq = parent.seq + 1
	}
	fr.h.fr = fr
	fr.below = ancestry{all: parent != nil && parent != db.base} // Begin does better
	return fr
}

// Begin starts a child frame of fr (the next block). fr is sealed from now on.
//
// fr's hash keys are brought up to date first (a no-op when its root was
// computed, as a client does for every block): a sealed frame's keys cannot be
// stored in it later, so a child hashing them would have to copy the parent's
// changed vertices into itself, and every other child would do the same work.
//
// Begin on a nil frame returns a zero Frame, whose every method answers
// ErrNilFrame.
func (fr *Frame) Begin() *Frame {
	if fr == nil || fr.db == nil {
		return new(Frame)
	}
	fr.db.mu.Lock()
	defer fr.db.mu.Unlock()
	fr.db.finishPacks()
	hashed := false
	if fr.check(false) == nil && !fr.sealed {
		_, err := fr.rootKey(vertex.RootID) // an error here surfaces again in the child
		hashed = err == nil
	}
	fr.sealed = true
	fr.pack(hashed)
	c := newFrame(fr.db, fr, fr.alloc)
	c.below = ancestryOf(fr.db, fr)
	return c
}

// pack replaces the vertices of fr, sealed, by their records
// (framestore.Store.Pack), and drops the memory that held them: the slabs and
// arenas the vertices came from, the hasher's children's keys. When fr was
// hashed (every key computed, so no hash changes a vertex of its in place)
// the records are encoded on a goroutine of its own, beside the next block,
// and the next Begin puts them in place (DB.finishPacks); else here. The
// caller holds db.mu exclusively. The base (whose store is empty) is not
// packed.
func (fr *Frame) pack(hashed bool) {
	if fr == fr.db.base || fr.vtx.Packed() {
		return
	}
	if hashed {
		fr.vtx.StartPack(fr.db.packScratch, &packCodec)
		fr.db.packScratch = nil // the pack's until it is finished
		fr.db.packing = append(fr.db.packing, fr)
		return
	}
	fr.db.packScratch = keepScratch(fr.vtx.Pack(fr.db.packScratch, &packCodec))
	fr.dropVertices()
}

// dropVertices drops the memory that held fr's vertices, once they are
// records.
func (fr *Frame) dropVertices() {
	if fr.vtx.Packed() {
		fr.arena, fr.slab, fr.accSlab, fr.h = nil, nil, nil, hasher{fr: fr}
	}
}

// maxPackScratch bounds the encode buffer the database keeps between packs:
// a block's frame needs a few MiB; a bulk frame's would be kept for nothing.
const maxPackScratch = 64 << 20

// keepScratch returns the encode buffer a pack or repack handed back, for
// db.packScratch: nil for one above maxPackScratch.
func keepScratch(b []byte) []byte {
	if cap(b) > maxPackScratch {
		return nil
	}
	return b
}

// Rollback drops the frame and its changes. Frames begun on it turn stale. On a
// nil frame it does nothing.
func (fr *Frame) Rollback() {
	if fr == nil || fr.db == nil {
		return
	}
	fr.db.mu.Lock()
	defer fr.db.mu.Unlock()
	if fr.state == live && fr != fr.db.base {
		fr.state = dropped
		// Nothing reads a dropped frame's store again (check fails first),
		// and no reader is in one now (this holds the exclusive lock): free
		// its packed records now, not at the next collection.
		fr.vtx.Release()
	}
}

// check returns the error that keeps fr from being read (write: or written). A
// write also counts towards the choice of parallel hashing.
func (fr *Frame) check(write bool) error {
	if fr.db.closed {
		return ErrClosed
	}
	for f := fr; f != nil; f = f.parent {
		if f.state != live {
			return ErrStale
		}
	}
	if write {
		if fr.sealed {
			return ErrSealed
		}
		fr.writes++
	}
	return nil
}

// get returns vertex id as this frame sees it, or nil when there is none.
func (fr *Frame) get(id vertex.ID) (*node, error) {
	if v, ok := fr.inChain(id); ok {
		return v, nil
	}
	return fr.db.load(id)
}

// need returns vertex id, which something refers to (a branch slot, an account's
// storage root) and which therefore must exist: its absence is corruption
// (ErrMissingVertex), not an empty trie.
func (fr *Frame) need(id vertex.ID) (*node, error) {
	v, err := fr.get(id)
	if err == nil && v == nil {
		err = vertexError(id, ErrMissingVertex)
	}
	return v, err
}

// lookup is need when must is set and get otherwise (the root of a trie, which
// may be empty).
func (fr *Frame) lookup(id vertex.ID, must bool) (*node, error) {
	if must {
		return fr.need(id)
	}
	return fr.get(id)
}

// own returns a version of v (vertex id as seen by fr) that fr may change: v
// itself when fr already holds it or v was decoded for this caller alone
// (private), a clone registered in fr otherwise. Its key is void: it is
// about to change.
func (fr *Frame) own(id vertex.ID, v *node) *node {
	if cur, _ := fr.vtx.Lookup(id); cur == v {
		v.Key = hashkey.Key{}
		return v
	}
	if v.private {
		v.private, v.Key = false, hashkey.Key{}
		fr.vtx.Set(id, v)
		return v
	}
	c := fr.clone(v)
	fr.vtx.Set(id, c)
	return c
}

// take returns the next zero element of *slab, refilling it with n new ones
// when it is used up: a frame allocates its short-lived vertices and accounts
// in chunks rather than one by one.
func take[T any](slab *[]T, n int) *T {
	if len(*slab) == 0 {
		*slab = make([]T, n)
	}
	v := &(*slab)[0]
	*slab = (*slab)[1:]
	return v
}

// newVertex returns a zero vertex from the frame's slab.
func (fr *Frame) newVertex() *node { return take(&fr.slab, 64) }

// newAccount returns a zero account from the frame's slab.
func (fr *Frame) newAccount() *vertex.Account { return take(&fr.accSlab, 32) }

// clone returns a slab-allocated copy of v with a void key (see vertex.Clone).
// Its path is copied into the frame's arena: a vertex decoded from a record
// keeps its path in the decoder's buffer, which holds the whole record, and
// a frame should not keep that alive for a few nibbles.
func (fr *Frame) clone(v *node) *node {
	c := fr.newVertex()
	v.cloneInto(c)
	c.Key = hashkey.Key{}
	c.Path = nil
	if len(v.Path) > 0 {
		c.Path = fr.nibbles(v.Path)
	}
	return c
}

// newLeaf returns a new leaf with path and payload p.
func (fr *Frame) newLeaf(path []byte, p *payload) *node {
	v := fr.newVertex()
	v.Kind, v.Path = vertex.Leaf, path
	p.setOn(v)
	return v
}

// nibbles copies p into the frame's arena: paths of new vertices share a few large
// allocations instead of taking one each.
func (fr *Frame) nibbles(p ...[]byte) []byte {
	n := 0
	for _, s := range p {
		n += len(s)
	}
	if n == 0 {
		return nil
	}
	if cap(fr.arena)-len(fr.arena) < n {
		fr.arena = make([]byte, 0, max(n, 16<<10))
	}
	start := len(fr.arena)
	for _, s := range p {
		fr.arena = append(fr.arena, s...)
	}
	return fr.arena[start:len(fr.arena):len(fr.arena)]
}

// keyNibbles expands key into nibbles directly in the frame's arena.
func (fr *Frame) keyNibbles(key []byte) []byte {
	n := 2 * len(key)
	if cap(fr.arena)-len(fr.arena) < n {
		fr.arena = make([]byte, 0, max(n, 16<<10))
	}
	start := len(fr.arena)
	fr.arena = hashkey.AppendNibbles(fr.arena, key)
	return fr.arena[start:len(fr.arena):len(fr.arena)]
}

// newBranch returns an empty branch with path p, its child slots allocated as the
// database's format requires.
func (fr *Frame) newBranch(p []byte) *node {
	b := fr.newVertex()
	fr.alloc.InitBranch(&b.Vertex, fr.db.format, p, nil)
	return b
}

// addChild marks slot n of branch b used and returns the child's ID: base+n in v2,
// a fresh ID in v1.
func (fr *Frame) addChild(b *node, n byte) vertex.ID { return fr.alloc.AddChild(&b.Vertex, n) }
