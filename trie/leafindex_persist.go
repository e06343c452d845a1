package trie

import (
	"bytes"
	"slices"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/vertex"
)

// How a persist derives the leaf index's changes from its vertex changes
// alone (so that a frame replayed from the journal, which holds only
// records, persists the same changes). Every write changes the whole path
// from the root to what it wrote, so the changed vertices form a tree hanging
// from the root: walking the new versions through changed IDs reaches every
// leaf whose key or value may be new (an entry to put), and walking the old
// versions (the records the backend holds) through the same IDs reaches every
// leaf that may have gone (an entry to delete unless the new walk put it). An
// account whose storage trie was replaced or dropped (its storage ID changed)
// loses all its slots' entries with one prefix delete instead of a walk of
// the old storage trie.

// leafDiff collects one persist's index changes. Both walks visit children
// in nibble order and an account's storage trie right after the account, so
// they produce keys in ascending order: the new walk's puts are sorted, and
// the old walk looks keys up in them by binary search.
type leafDiff struct {
	db      *DB
	changes []change // sorted by ID, newest versions
	puts    []vertex.LeafEntry
	storage []vertex.ID // per put: an account's storage ID (NoID for a slot)
	dels    []vertex.LeafEntry
	prefix  [][]byte
	// The nibble paths of the walks: one buffer for the account trie, one for
	// the storage trie being walked. A walk extends its prefix in place for
	// each child in turn (depth first, a child's path is done with before
	// the next one's is written), so a walk allocates no paths.
	accNib, slotNib []byte
	buf             []byte // arena of the entries' keys and values
}

// nibbles returns the empty path buffer of the account trie or of a storage
// trie.
func (d *leafDiff) nibbles(storage bool) []byte {
	b := &d.accNib
	if storage {
		b = &d.slotNib
	}
	if *b == nil {
		*b = make([]byte, 0, 2*len(hashkey.Hash{})+2)
	}
	return (*b)[:0]
}

// put returns the index of key among the puts, or -1.
func (d *leafDiff) put(key []byte) int {
	i, ok := slices.BinarySearchFunc(d.puts, key, func(e vertex.LeafEntry, k []byte) int { return bytes.Compare(e.Key, k) })
	if !ok {
		return -1
	}
	return i
}

// leafChanges returns the leaf index's changes of a persist whose sorted
// changes are changes (see chainChanges), reading the old versions from the
// cache and the backend (not from the pending write: the caller is writing
// it).
func (db *DB) leafChanges(changes []change) (leaves []vertex.LeafEntry, prefixes [][]byte, err error) {
	d := &leafDiff{db: db, changes: changes}
	d.walkNew(vertex.RootID, d.nibbles(false), nil)
	if err := d.walkOld(vertex.RootID, d.nibbles(false), nil); err != nil {
		return nil, nil, err
	}
	return append(d.dels, d.puts...), d.prefix, nil
}

// changed returns the new version of id (nil: deleted) and whether the
// persist changed it.
func (d *leafDiff) changed(id vertex.ID) (*node, bool) {
	i, ok := slices.BinarySearchFunc(d.changes, id, func(c change, id vertex.ID) int {
		if c.id < id {
			return -1
		} else if c.id > id {
			return 1
		}
		return 0
	})
	if !ok {
		return nil, false
	}
	return d.changes[i].v, true
}

// appendLeafKey appends the index key of the leaf at nibble path
// prefix+path, in the storage trie of account owner when owner is not nil, to
// dst; ok is false for a key that is not 32 bytes (not a state trie).
func appendLeafKey(dst, prefix, path []byte, owner *hashkey.Hash) (key []byte, ok bool) {
	if len(prefix)+len(path) != 64 {
		return dst, false
	}
	if owner != nil {
		dst = append(dst, owner[:]...)
	}
	nib := func(j int) byte {
		if j < len(prefix) {
			return prefix[j]
		}
		return path[j-len(prefix)]
	}
	for i := range 32 {
		dst = append(dst, nib(2*i)<<4|nib(2*i+1))
	}
	return dst, true
}

// arena returns the free tail of the diff's byte arena, where keys and
// values are appended: an arena that grows leaves the slices taken from it
// valid, in the old array.
func (d *leafDiff) arena() []byte {
	if cap(d.buf)-len(d.buf) < 160 {
		d.buf = make([]byte, 0, 64<<10)
	}
	return d.buf[len(d.buf):]
}

// take marks the bytes appended to arena a as used and returns them.
func (d *leafDiff) take(a []byte) []byte {
	d.buf = d.buf[:len(d.buf)+len(a)]
	return a[:len(a):len(a)]
}

// walkNew walks the new versions of the changed vertices below id (at nibble
// path prefix, in owner's storage trie or the account trie) and collects
// their leaves' entries.
func (d *leafDiff) walkNew(id vertex.ID, prefix []byte, owner *hashkey.Hash) {
	v, ok := d.changed(id)
	if !ok || v == nil {
		return
	}
	if v.Kind == vertex.Branch {
		p := append(prefix, v.Path...)
		for n := range 16 {
			if c := v.Child(n); c != vertex.NoID {
				if _, ok := d.changed(c); ok {
					d.walkNew(c, append(p, byte(n)), owner)
				}
			}
		}
		return
	}
	key, ok := appendLeafKey(d.arena(), prefix, v.Path, owner)
	if !ok || (v.Payload != vertex.AccountPayload && v.Payload != vertex.SlotPayload) {
		return
	}
	key = d.take(key)
	d.puts = append(d.puts, vertex.LeafEntry{Key: key, Val: d.take(leafValue(d.arena(), &v.Vertex))})
	d.storage = append(d.storage, vertex.NoID)
	if owner == nil && v.Acc != nil {
		h := hashkey.Hash(key)
		d.storage[len(d.storage)-1] = v.Acc.Storage
		if v.Acc.Storage != vertex.NoID {
			d.walkNew(v.Acc.Storage, d.nibbles(true), &h)
		}
	}
}

// walkOld walks the old versions of the changed vertices below id and
// collects the entries of their leaves that the new walk did not reach.
func (d *leafDiff) walkOld(id vertex.ID, prefix []byte, owner *hashkey.Hash) error {
	if _, ok := d.changed(id); !ok {
		return nil
	}
	v, err := d.db.storedVertex(id)
	if err != nil || v == nil {
		return err
	}
	if v.Kind == vertex.Branch {
		p := append(prefix, v.Path...)
		for n := range 16 {
			if c := v.Child(n); c != vertex.NoID {
				if _, ok := d.changed(c); !ok {
					continue
				}
				if err := d.walkOld(c, append(p, byte(n)), owner); err != nil {
					return err
				}
			}
		}
		return nil
	}
	key, ok := appendLeafKey(d.arena(), prefix, v.Path, owner)
	if !ok || (v.Payload != vertex.AccountPayload && v.Payload != vertex.SlotPayload) {
		return nil
	}
	key = d.take(key)
	i := d.put(key)
	if i < 0 {
		d.dels = append(d.dels, vertex.LeafEntry{Key: key})
	}
	if owner != nil || v.Acc == nil || v.Acc.Storage == vertex.NoID {
		return nil
	}
	h := hashkey.Hash(key)
	if i < 0 || d.storage[i] != v.Acc.Storage {
		// Deleted, or its storage trie replaced or emptied: every old slot goes.
		d.prefix = append(d.prefix, key)
		return nil
	}
	return d.walkOld(v.Acc.Storage, d.nibbles(true), &h)
}

// storedVertex returns vertex id as the backend holds it (nil when absent),
// from the cache or the backend, bypassing a pending write (and not caching
// what it reads: the pending write shadows the cache).
func (db *DB) storedVertex(id vertex.ID) (*node, error) {
	var v *node
	if ok, err := db.cache.Get(id, func(rec []byte) (err error) {
		v, err = db.decode(id, rec)
		return err
	}); ok || err != nil {
		return v, err
	}
	rec, err := db.backend.Vertex(id)
	if err != nil {
		return nil, vertexError(id, err)
	}
	if rec == nil {
		return nil, nil
	}
	return db.decode(id, rec)
}
