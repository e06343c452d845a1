package trie

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/vertex"
)

// A format-v1 source laid out by the builder (a StateLoader's or a copy's
// store, not grown by frames since) is copied into a format-v2 target by
// one sequential scan of its IDs instead of a walk of its trie.
//
// Why it works: the builder gives a v1 vertex its ID when the vertex is
// finished, after every vertex of its sub-trie (an account's storage trie's
// top after the storage trie's other vertices, then the account's leaf), and
// the trie's top vertex, finished last, RootID. Ascending IDs above RootID
// are therefore a post-order of the trie: every vertex comes after its
// descendants, and the children of a branch are the last vertices before it
// that no branch has claimed yet, in nibble order. The scan keeps those
// unclaimed vertices on a stack (scanItem): a leaf is pushed; a branch pops
// its children, which must be the top of the stack with exactly the source
// IDs its record names, takes its 16 target slots (as the walk does when the
// branch is done: copier.branch) and writes its children there; an account
// with storage pops its storage trie's top and gives it the next ID (as
// copier.leaf does). The target's IDs, records and keys are then exactly the
// walk's, in the same order, with no random read and every record decoded at
// most once.
//
// Nothing depends on the layout being right: a branch whose children are
// not on top of the stack, an account whose storage top is not, or a stack
// that grows past any trie's depth stops the scan (errScanOrder) before
// anything inconsistent is written; CopyAuto then copies by the walk from the
// start (scanFallback), CopyScan fails.

// errScanOrder says the source is not laid out in the builder's order.
var errScanOrder = errors.New("trie: copy: the source's IDs are not in the builder's order")

// maxScanItems bounds the stack: a post-order of any trie keeps at most 16
// vertices per open branch, and an account path plus a storage path is at
// most 128 branches deep.
const maxScanItems = 16 * 130

// scanDecodeBytes is the room the scan decodes a record's pieces in: a
// branch's path and children's keys fit.
const scanDecodeBytes = 4096

// scanSafeEvery is how many records the scan copies between two safe points
// (a checkpoint when one is due, a check of the context).
const scanSafeEvery = 256

// copyScanIDs is how many IDs one read of the scan covers.
const copyScanIDs = 1 << 16

// scanItem is a vertex the scan copied whose parent it has not reached: its
// target record, and its key when known (a branch's always is; a leaf's is
// computed only when its parent needs it, from its record and, for an
// account with storage, its storage trie's root key or top record).
type scanItem struct {
	src      vertex.ID
	off, end int         // its target record: scan.arena[off:end]
	send     int         // an account's storage top's record, arena[end:send], when its key is not known (only in a resume state written before leaves recorded their storage roots)
	key      hashkey.Key // when keyOK
	keyOK    bool
	sroot    hashkey.Hash // an account's storage root, when srootOK
	srootOK  bool
}

// copyScan is the scan's state: where it reads next and its stack, whose
// records lie in arena in stack order.
type copyScan struct {
	next  vertex.ID // the next source ID to read
	items []scanItem
	arena []byte
	// scratch
	v       vertex.Vertex
	acc     vertex.Account
	dec     []byte // what v's slices hold
	keys    [16]hashkey.Key
	ck      []byte
	out     []byte
	sv      vertex.Vertex
	sacc    vertex.Account
	sdec    []byte
	pending int // records read since the last safe point
}

// scanCopyable reports whether the copy can scan: a v1 source whose layout
// probe found the builder's order, into a v2 target.
func (c *copier) scanCopyable() bool {
	return c.src.format == vertex.FormatV1 && c.db.format == vertex.FormatV2 &&
		sourceLaidOut(c.src.backend, c.src.format, c.srcTop)
}

// scan copies the source by a scan of its IDs and commits; with fallback set
// a source found out of order is copied by the walk instead.
func (c *copier) scan(fallback bool) (hashkey.Hash, error) {
	c.scanning = true
	s := c.scanState
	if s == nil {
		s = &copyScan{next: vertex.FirstFreeID}
		c.scanState = s
	}
	if s.dec == nil {
		s.dec, s.sdec = make([]byte, 0, scanDecodeBytes), make([]byte, 0, scanDecodeBytes)
	}
	err := c.scanIDs(s)
	if err == nil {
		var root []byte
		var found bool
		root, found, err = c.direct.srcVertex(vertex.RootID, nil)
		switch {
		case err != nil:
			err = fmt.Errorf("trie: copy: reading the source's root: %w", err)
		case !found:
			err = fmt.Errorf("%w: the source's root vertex is missing", ErrCopy)
		default:
			err = c.scanRecord(s, vertex.RootID, root)
		}
	}
	if err == nil && (len(s.items) != 1 || s.items[0].src != vertex.RootID) {
		err = fmt.Errorf("%w: %d vertices left unclaimed", errScanOrder, len(s.items))
	}
	if errors.Is(err, errScanOrder) && fallback {
		return c.scanFallback()
	}
	if errors.Is(err, errScanOrder) {
		return hashkey.Hash{}, fmt.Errorf("%w: %w (copy it by its walk)", ErrCopy, err)
	}
	if err != nil {
		return hashkey.Hash{}, err
	}
	top := &s.items[0]
	key, err := c.scanKey(s, top)
	if err != nil {
		return hashkey.Hash{}, err
	}
	if got := key.Hash(); got != c.want {
		return hashkey.Hash{}, fmt.Errorf("%w: the copied root's key %v is not the source's root %v", ErrCopy, got, c.want)
	}
	if err := c.emit(vertex.RootID, s.arena[top.off:top.end]); err != nil {
		return hashkey.Hash{}, err
	}
	c.scanState = nil
	return c.commit()
}

// scanIDs scans the source's IDs from s.next to its allocator's top.
func (c *copier) scanIDs(s *copyScan) error {
	for s.next <= c.srcTop {
		n := uint64(min(copyScanIDs, c.srcTop-s.next+1))
		first := s.next
		err := c.direct.srcRange(first, int(n), func(id vertex.ID, rec []byte) error {
			if err := c.scanRecord(s, id, rec); err != nil {
				return err
			}
			s.next = id + 1
			if s.pending++; s.pending >= scanSafeEvery {
				s.pending = 0
				return c.safePoint(func() copyState { return c.scanCopyState(s) })
			}
			return nil
		})
		if err != nil {
			return err
		}
		s.next = first + vertex.ID(n)
	}
	return nil
}

// scanRecord copies source vertex id of record rec (see the comment above).
func (c *copier) scanRecord(s *copyScan, id vertex.ID, rec []byte) error {
	if len(rec) == 0 {
		return fmt.Errorf("%w: source vertex %d: empty record", ErrCopy, id)
	}
	if len(s.items) >= maxScanItems {
		return fmt.Errorf("%w: over %d vertices unclaimed at %d", errScanOrder, maxScanItems, id)
	}
	if rec[0]&3 == 1 && !leafHasStorage(rec) {
		off := len(s.arena)
		s.arena = append(s.arena, rec...)
		s.items = append(s.items, scanItem{src: id, off: off, end: len(s.arena), send: len(s.arena)})
		return nil
	}
	s.v, s.acc = vertex.Vertex{}, vertex.Account{}
	if err := vertex.DecodeIntoBuf(&s.v, &s.acc, rec, s.dec); err != nil {
		return fmt.Errorf("trie: copy: source vertex %d: %w", id, err)
	}
	if s.v.Kind == vertex.Leaf {
		return c.scanAccount(s, id)
	}
	return c.scanBranch(s, id)
}

// scanAccount copies the account leaf s.v, source vertex id, whose storage
// trie's top is on top of the stack.
func (c *copier) scanAccount(s *copyScan, id vertex.ID) error {
	n := len(s.items)
	if n == 0 || s.items[n-1].src != s.acc.Storage {
		return fmt.Errorf("%w: account vertex %d: its storage trie %d is not the last vertex unclaimed", errScanOrder, id, s.acc.Storage)
	}
	top := s.items[n-1]
	// The storage trie's top takes its ID after the trie's other vertices,
	// which its own copy took (copier.leaf).
	sid := c.alloc.Take(1)
	if err := c.emit(sid, s.arena[top.off:top.end]); err != nil {
		return err
	}
	// The leaf records its storage root: the key of the trie's top, which
	// for a storage trie of one slot is its leaf's (one keccak).
	root, err := c.scanKey(s, &top)
	if err != nil {
		return err
	}
	s.acc.Storage, s.acc.StorageKey = sid, root.Hash()
	s.out = vertex.Encode(s.out[:0], &s.v)
	s.arena = append(s.arena[:top.off], s.out...)
	it := scanItem{src: id, off: top.off, end: len(s.arena), send: len(s.arena), sroot: s.acc.StorageKey, srootOK: true}
	s.items = append(s.items[:n-1], it)
	return nil
}

// scanBranch copies branch s.v, source vertex id, whose children are on top
// of the stack: they take its 16 target slots, as copier.branch gives them.
func (c *copier) scanBranch(s *copyScan, id vertex.ID) error {
	v := &s.v
	k := bits.OnesCount16(v.Used)
	if v.Kids == nil || k == 0 || len(s.items) < k {
		return fmt.Errorf("%w: branch %d with %d children, %d vertices unclaimed", errScanOrder, id, k, len(s.items))
	}
	kids := s.items[len(s.items)-k:]
	needKeys := c.needKidKeys(v)
	s.keys = [16]hashkey.Key{}
	i := 0
	for n := 0; n < 16; n++ {
		if v.Used&(1<<n) == 0 {
			continue
		}
		if kids[i].src != v.Kids[n] {
			return fmt.Errorf("%w: branch %d: child %d is %d, the vertex unclaimed there is %d", errScanOrder, id, n, v.Kids[n], kids[i].src)
		}
		if needKeys {
			key, err := c.scanKey(s, &kids[i])
			if err != nil {
				return err
			}
			s.keys[n] = key
		}
		i++
	}
	s.ck = c.branchKeys(v, &s.keys, s.ck)
	v.Base, v.Kids = c.alloc.Take(vertex.BranchSlots), nil
	i = 0
	for n := 0; n < 16; n++ {
		if v.Used&(1<<n) != 0 {
			if err := c.emit(v.Base+vertex.ID(n), s.arena[kids[i].off:kids[i].end]); err != nil {
				return err
			}
			i++
		}
	}
	s.out = vertex.Encode(s.out[:0], v)
	off := kids[0].off
	s.arena = append(s.arena[:off], s.out...)
	s.items = append(s.items[:len(s.items)-k], scanItem{src: id, off: off, end: len(s.arena), send: len(s.arena), key: v.Key, keyOK: true})
	return nil
}

// scanKey returns the key of it, computing a leaf's.
func (c *copier) scanKey(s *copyScan, it *scanItem) (hashkey.Key, error) {
	if it.keyOK {
		return it.key, nil
	}
	root := hashkey.EmptyRoot
	switch {
	case it.send > it.end: // a storage trie of one slot
		k, err := c.leafKey(s, it.src, s.arena[it.end:it.send], &root)
		if err != nil {
			return hashkey.Key{}, err
		}
		root = k.Hash()
	case it.srootOK:
		root = it.sroot
	}
	k, err := c.leafKey(s, it.src, s.arena[it.off:it.end], &root)
	if err != nil {
		return hashkey.Key{}, err
	}
	it.key, it.keyOK = k, true
	return k, nil
}

// leafKey computes the key of leaf record rec (of, or below, source vertex
// id) whose storage root is root.
func (c *copier) leafKey(s *copyScan, id vertex.ID, rec []byte, root *hashkey.Hash) (hashkey.Key, error) {
	s.sv, s.sacc = vertex.Vertex{}, vertex.Account{}
	if err := vertex.DecodeIntoBuf(&s.sv, &s.sacc, rec, s.sdec); err != nil {
		return hashkey.Key{}, fmt.Errorf("trie: copy: source vertex %d: %w", id, err)
	}
	c.computed++
	return c.enc.LeafKey(&s.sv, root), nil
}

// scanFallback starts the copy again by the walk, for a source the scan
// found out of order: the target's allocator and the records counted go
// back to where the copy started (what the scan wrote lies above the
// allocator's top and is written over), and a checkpoint of the walk's
// start replaces any of the scan's, so that a stop from here on resumes the
// walk.
func (c *copier) scanFallback() (hashkey.Hash, error) {
	if err := c.wait(); err != nil {
		return hashkey.Hash{}, err
	}
	c.scanState, c.scanning = nil, false
	c.alloc.Top, c.records, c.lastCP = c.startTop, 0, 0
	c.w.cur.batch.Puts, c.w.cur.buf = c.w.cur.batch.Puts[:0], c.w.cur.buf[:0]
	c.w.held, c.w.heldBuf, c.w.cut, c.w.written = nil, nil, c.startTop, 0
	if c.opts.Checkpoint != nil {
		st := c.walkState()
		if err := c.opts.Checkpoint(st.encode(), c.report()); err != nil {
			return hashkey.Hash{}, fmt.Errorf("trie: copy: checkpoint: %w", err)
		}
	}
	return c.readAndCopy()
}

// scanCopyState is the scan's resume state at a safe point.
func (c *copier) scanCopyState(s *copyScan) copyState {
	b := binary.BigEndian.AppendUint64(nil, uint64(s.next))
	b = binary.AppendUvarint(b, uint64(len(s.items)))
	for i := range s.items {
		it := &s.items[i]
		var flags byte
		if it.keyOK {
			flags |= 1
		}
		if it.srootOK {
			flags |= 2
		}
		b = binary.BigEndian.AppendUint64(b, uint64(it.src))
		b = append(b, flags)
		b = binary.AppendUvarint(b, uint64(it.end-it.off))
		b = append(b, s.arena[it.off:it.end]...)
		b = binary.AppendUvarint(b, uint64(it.send-it.end))
		b = append(b, s.arena[it.end:it.send]...)
		if it.keyOK {
			b = append(b, byte(it.key.Len()))
			b = append(b, it.key.Bytes()...)
		}
		if it.srootOK {
			b = append(b, it.sroot[:]...)
		}
	}
	return copyState{format: c.db.format, top: c.alloc.Top, records: c.records, scan: b}
}

// decodeScanState restores the scan's state from a resume state's scan part.
func decodeScanState(b []byte) (*copyScan, error) {
	bad := func(why string) (*copyScan, error) {
		return nil, fmt.Errorf("%w: resume state: %s", ErrCopy, why)
	}
	if len(b) < 8 {
		return bad("truncated scan state")
	}
	s := &copyScan{next: vertex.ID(binary.BigEndian.Uint64(b))}
	b = b[8:]
	n, k := binary.Uvarint(b)
	if k <= 0 || n > maxScanItems {
		return bad("bad scan stack")
	}
	b = b[k:]
	field := func() ([]byte, bool) {
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) {
			return nil, false
		}
		f := b[k : k+int(l)]
		b = b[k+int(l):]
		return f, true
	}
	for range n {
		if len(b) < 9 {
			return bad("truncated scan item")
		}
		it := scanItem{src: vertex.ID(binary.BigEndian.Uint64(b))}
		flags := b[8]
		b = b[9:]
		rec, ok1 := field()
		srec, ok2 := field()
		if !ok1 || !ok2 || len(rec) == 0 {
			return bad("truncated scan item")
		}
		it.off = len(s.arena)
		s.arena = append(s.arena, rec...)
		it.end = len(s.arena)
		s.arena = append(s.arena, srec...)
		it.send = len(s.arena)
		if flags&1 != 0 {
			if len(b) < 1 || b[0] > 32 || len(b) < 1+int(b[0]) {
				return bad("truncated scan item key")
			}
			it.key, _ = hashkey.KeyFromBytes(b[1 : 1+b[0]])
			it.keyOK = true
			b = b[1+b[0]:]
		}
		if flags&2 != 0 {
			if len(b) < 32 {
				return bad("truncated scan item root")
			}
			copy(it.sroot[:], b)
			it.srootOK = true
			b = b[32:]
		}
		s.items = append(s.items, it)
	}
	if len(b) != 0 {
		return bad("trailing bytes")
	}
	return s, nil
}
