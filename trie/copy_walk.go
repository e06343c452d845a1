package trie

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/vertex"
)

// maxCopyFrames is how many of the account trie's top branches a copy's
// checkpoint records: it can resume after any child of one of them.
const maxCopyFrames = 8

// copyLevel is the scratch of one depth of the walk: the vertex there, its
// children's source IDs and records, and its target record.
type copyLevel struct {
	v    vertex.Vertex
	acc  vertex.Account
	ids  [16]vertex.ID
	recs [16][]byte
	offs [16][2]int // where in buf each child's record lies
	buf  []byte     // the children's records
	out  []byte     // the target record of the vertex
	ck   []byte     // packed children's keys computed here
	kids [16]vertex.ID
	keys [16]hashkey.Key
	// held are a format-v2 branch's children's target records, emitted
	// when the branch is done and takes its slots.
	held [16][]byte
	kidReader
}

// copyFrame is an open branch of the account trie, as a checkpoint records
// it: its source ID, the child being walked (in the deepest frame of a
// checkpoint: the child just finished), and what its finished children were
// given: the v1 child IDs or the v2 target records (held: the branch takes
// its slots when it is done), the children's keys.
type copyFrame struct {
	src  vertex.ID
	nib  int
	done uint16 // children finished
	kids [16]vertex.ID
	recs [16][]byte
	keys [16]hashkey.Key
}

// copyLevels is a walk's scratch, one copyLevel per depth.
type copyLevels []*copyLevel

// at returns the scratch of depth d.
func (ls *copyLevels) at(d int) *copyLevel {
	for len(*ls) <= d {
		L := new(copyLevel)
		L.kidReader.init(L)
		*ls = append(*ls, L)
	}
	return (*ls)[d]
}

// walk copies the sub-trie whose top vertex is source vertex id with record
// rec: it emits every vertex below the top and returns the top's target
// record (valid until the next walk at depth d) for the caller to place, and
// its key when want is set (else the key its record stores, if any). acct
// says it is in the account trie.
func (c *copier) walk(d int, id vertex.ID, rec []byte, acct, want bool) ([]byte, hashkey.Key, error) {
	if len(rec) == 0 {
		return nil, hashkey.Key{}, fmt.Errorf("%w: source vertex %d: empty record", ErrCopy, id)
	}
	if acct && c.pre != nil && d == c.pre.depth {
		c.startSubtrie(id)
		defer c.dropStream()
	}
	if rec[0]&3 == 1 { // a leaf
		if len(c.resume) > 0 {
			return nil, hashkey.Key{}, fmt.Errorf("%w: the resume state does not fit the source (a leaf at %d)", ErrCopy, id)
		}
		return c.leaf(d, id, rec, want)
	}
	return c.branch(d, id, rec, acct)
}

// startSubtrie begins the walk of the sub-trie at the read-ahead's depth
// whose top is source vertex id: its reads come from the stream the workers
// read it into, unless the walk resumes inside it (the resume state skips
// reads the stream holds).
func (c *copier) startSubtrie(id vertex.ID) {
	s := c.pre.streamFor(id)
	if s != nil && len(c.resume) > 0 {
		s.release(c.pre)
		s = nil
	}
	c.stream = s
}

// dropStream stops reading the current sub-trie from its stream: the rest
// is read from the source.
func (c *copier) dropStream() {
	if c.stream != nil {
		c.stream.release(c.pre)
		c.stream = nil
	}
}

// readKids reads the records of v's children (v is &L.v) into L: from the
// sub-trie's stream when it holds them next, else from the source.
func (c *copier) readKids(L *copyLevel, id vertex.ID, v *vertex.Vertex) error {
	if c.stream != nil {
		if c.stream.kids(c.pre, L, v) {
			c.prefetched += uint64(bits.OnesCount16(v.Used))
			return nil
		}
		c.dropStream()
	}
	return c.direct.readKids(L, id, v)
}

// srcVertex appends the record of source vertex id to dst: from the
// sub-trie's stream when it holds it next, else from the source.
func (c *copier) srcVertex(id vertex.ID, dst []byte) ([]byte, bool, error) {
	if c.stream != nil {
		if rid, rec, ok := c.stream.next(c.pre); ok && rid == id {
			c.prefetched++
			return append(dst, rec...), true, nil
		}
		c.dropStream()
	}
	return c.direct.srcVertex(id, dst)
}

// leaf copies a leaf: as it is, unless it is an account with storage, whose
// storage trie is copied first and whose storage ID changes.
func (c *copier) leaf(d int, id vertex.ID, rec []byte, want bool) ([]byte, hashkey.Key, error) {
	storage := leafHasStorage(rec)
	if !storage && !want {
		return rec, hashkey.Key{}, nil
	}
	L := c.levels.at(d)
	L.v, L.acc = vertex.Vertex{}, vertex.Account{}
	if err := vertex.DecodeInto(&L.v, &L.acc, rec); err != nil {
		return nil, hashkey.Key{}, fmt.Errorf("trie: copy: source vertex %d: %w", id, err)
	}
	if !storage {
		c.computed++
		return rec, c.enc.LeafKey(&L.v, &hashkey.EmptyRoot), nil
	}
	src := L.acc.Storage
	// L.buf is free: it holds the children of a branch at depth d, and the
	// vertex there is this leaf.
	srec, found, err := c.srcVertex(src, L.buf[:0])
	if err != nil {
		return nil, hashkey.Key{}, fmt.Errorf("trie: copy: reading storage trie %d: %w", src, err)
	}
	L.buf = srec
	if !found {
		return nil, hashkey.Key{}, fmt.Errorf("%w: storage trie %d of account vertex %d is missing", ErrCopy, src, id)
	}
	// The leaf records its storage root, the key of the trie's top: a
	// branch's record stores it, a leaf's (a trie of one slot) is computed.
	out, sk, err := c.walk(d+1, src, srec, false, want || !vertex.HasKey(srec))
	if err != nil {
		return nil, hashkey.Key{}, err
	}
	sid := c.alloc.Take(1) // after the storage trie's other IDs, as the builder takes it
	if err := c.emit(sid, out); err != nil {
		return nil, hashkey.Key{}, err
	}
	root := sk.Hash()
	L.acc.Storage, L.acc.StorageKey = sid, root
	L.out = vertex.Encode(L.out[:0], &L.v)
	var k hashkey.Key
	if want {
		c.computed++
		k = c.enc.LeafKey(&L.v, &root)
	}
	return L.out, k, nil
}

// leafHasStorage reports whether leaf record rec is an account with a storage
// trie; a malformed record says yes, so that it gets decoded (and refused).
func leafHasStorage(rec []byte) bool {
	if vertex.PayloadKind(rec[0]>>2&3) != vertex.AccountPayload {
		return false
	}
	n, k := binary.Uvarint(rec[1:])
	if k <= 0 || uint64(len(rec)) < 1+uint64(k)+n+1 {
		return true
	}
	return rec[1+k+int(n)]&(1<<3) != 0 // the account mask's storage bit
}

// needKidKeys reports whether copying branch v needs its children's keys:
// to compute its own key when its record does not store it, or to store
// them where the target keeps children's keys and the record has none. A
// stored key is kept as it is, unchecked (the copy's verification proves
// samples against the root).
func (c *copier) needKidKeys(v *vertex.Vertex) bool {
	haveCK := v.ChildKeys != nil && v.ChildKeys.Used() == v.Used
	return !haveCK && (!c.noChild || !v.Key.IsHash())
}

// branchKeys completes branch v's keys for its target record once its
// children are copied: its own key, computed from the children's when its
// record lacks it (keys holds them, as far as needKidKeys asked for them;
// those v's record stores are unpacked into it), and the children's keys as
// the target keeps them (packed into ck, which it returns, or none).
func (c *copier) branchKeys(v *vertex.Vertex, keys *[16]hashkey.Key, ck []byte) []byte {
	haveCK := v.ChildKeys != nil && v.ChildKeys.Used() == v.Used
	ownKey := !v.Key.IsHash()
	if haveCK && ownKey {
		v.ChildKeys.Unpack(keys)
	}
	if ownKey {
		c.computed++
		v.Key = c.enc.BranchKey(v, keys)
	}
	switch {
	case c.noChild:
		v.ChildKeys = nil
	case !haveCK:
		ck = vertex.PackChildKeys(ck[:0], v.Used, keys)
		v.ChildKeys = ck
	}
	return ck
}

// branch copies a branch and the sub-tries of its children, in key order,
// and returns its target record and its key (stored, or computed from its
// children's keys when its record lacks it).
func (c *copier) branch(d int, id vertex.ID, rec []byte, acct bool) ([]byte, hashkey.Key, error) {
	L := c.levels.at(d)
	L.v, L.acc = vertex.Vertex{}, vertex.Account{}
	v := &L.v
	if err := vertex.DecodeInto(v, &L.acc, rec); err != nil {
		return nil, hashkey.Key{}, fmt.Errorf("trie: copy: source vertex %d: %w", id, err)
	}
	needKeys := c.needKidKeys(v)
	if err := c.readKids(L, id, v); err != nil {
		return nil, hashkey.Key{}, err
	}
	L.kids, L.keys = [16]vertex.ID{}, [16]hashkey.Key{}
	v2 := c.db.format == vertex.FormatV2
	from := 0
	var fr *copyFrame
	if acct && len(c.path) < maxCopyFrames {
		c.path = append(c.path, copyFrame{src: id, nib: -1})
		fr = &c.path[len(c.path)-1]
		defer func() { c.path = c.path[:len(c.path)-1] }()
	}
	if len(c.resume) > 0 {
		res := c.resume[0]
		c.resume = c.resume[1:]
		if fr == nil || res.src != id || res.nib < 0 || res.nib > 15 || v.Used&(1<<res.nib) == 0 {
			return nil, hashkey.Key{}, fmt.Errorf("%w: the resume state does not fit the source (branch %d)", ErrCopy, id)
		}
		*fr = res
		L.kids, L.keys = res.kids, res.keys
		for n := 0; n < 16; n++ { // the held records copied out of the resume state, which refers to its caller's bytes
			if v2 && res.done&(1<<n) != 0 {
				L.held[n] = append(L.held[n][:0], res.recs[n]...)
				fr.recs[n] = L.held[n]
			}
		}
		from = res.nib // the child in progress: the walk below restores it
		if len(c.resume) == 0 {
			from++ // the child just finished
		}
	}
	for n := from; n < 16; n++ {
		if v.Used&(1<<n) == 0 {
			continue
		}
		if fr != nil {
			fr.nib = n
		}
		out, k, err := c.walk(d+1, L.ids[n], L.recs[n], acct, needKeys)
		if err != nil {
			return nil, hashkey.Key{}, err
		}
		if v2 { // held until the branch takes its slots, after its children's sub-tries
			L.held[n] = append(L.held[n][:0], out...)
		} else {
			L.kids[n] = c.alloc.Take(1)
			if err := c.emit(L.kids[n], out); err != nil {
				return nil, hashkey.Key{}, err
			}
		}
		L.keys[n] = k
		if fr != nil {
			fr.done |= 1 << n
			fr.kids, fr.keys = L.kids, L.keys
			fr.recs[n] = L.held[n]
			if err := c.safePoint(c.walkState); err != nil {
				return nil, hashkey.Key{}, err
			}
		}
	}
	L.ck = c.branchKeys(v, &L.keys, L.ck)
	if v2 {
		v.Base, v.Kids = c.alloc.Take(vertex.BranchSlots), nil
		for n := 0; n < 16; n++ {
			if v.Used&(1<<n) != 0 {
				if err := c.emit(v.Base+vertex.ID(n), L.held[n]); err != nil {
					return nil, hashkey.Key{}, err
				}
			}
		}
	} else {
		v.Base, v.Kids = vertex.NoID, &L.kids
	}
	L.out = vertex.Encode(L.out[:0], v)
	return L.out, v.Key, nil
}
