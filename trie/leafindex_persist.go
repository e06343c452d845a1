package trie

import (
	"bytes"
	"cmp"
	"slices"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/internal/manual"
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

// Leaves only go where a write removed one: DeleteAccount (an account and
// its whole storage trie), UpdateStorage of a zero value that removed a slot,
// a generic Delete. Frames note what such writes removed (removals): the
// slots removed, by key, whose entries are deleted unless the new walk put
// them again (no old version is read), and the accounts deleted, down whose
// paths alone the old walk goes instead of through every changed vertex: in
// a block of updates, which remove nothing, it reads no old version at all.
// A leaf that moved (a branch split or merged above it) keeps its key, so the
// new walk's put covers it. A frame replayed from the journal holds records
// only and cannot say what its writes removed: its persist walks everything,
// as does one with a generic Delete.

// removals says where a frame's writes (or a chain's) may have removed state
// leaves: anywhere when all is set, else the slots listed and the accounts
// listed (with their storage tries).
type removals struct {
	all      bool
	accounts []hashkey.Hash // deleted accounts; unsorted, may repeat
	slots    []removedSlot  // removed slots; unsorted, may repeat
}

// removedSlot is a slot a write removed: the account's and the slot's hash.
type removedSlot struct{ account, slot hashkey.Hash }

// addAccount notes that a write deleted account a (and its storage trie).
func (r *removals) addAccount(a hashkey.Hash) {
	if !r.all {
		r.accounts = append(r.accounts, a)
	}
}

// addSlot notes that a write removed slot s of account a.
func (r *removals) addSlot(a, s hashkey.Hash) {
	if !r.all {
		r.slots = append(r.slots, removedSlot{a, s})
	}
}

// merge adds o's removals to r.
func (r *removals) merge(o *removals) {
	if r.all = r.all || o.all; r.all {
		r.accounts, r.slots = nil, nil
		return
	}
	r.accounts = append(r.accounts, o.accounts...)
	r.slots = append(r.slots, o.slots...)
}

// leafDiff collects one persist's index changes. Both walks visit children
// in nibble order and an account's storage trie right after the account, so
// they produce keys in ascending order: the new walk's puts are sorted, and
// the old walk looks keys up in them by binary search.
type leafDiff struct {
	db      *DB
	changes []change      // sorted by ID, newest versions
	chain   []vertexStore // the stores the changes are in
	puts    []vertex.LeafEntry
	storage []vertex.ID // per put: an account's storage ID (NoID for a slot)
	dels    []vertex.LeafEntry
	prefix  [][]byte
	// The nibble paths of the walks: one buffer for the account trie, one for
	// the storage trie being walked. A walk extends its prefix in place for
	// each child in turn (depth first, a child's path is done with before
	// the next one's is written), so a walk allocates no paths.
	accNib, slotNib []byte
	room            recordRoom  // the entries' keys and values: the arena's
	path            []*walkNode // the new walk's decoded vertices, one per depth
	pace            *pacer
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
// it). The entries are in key order, each key once, so that a backend can
// write them as a sorted run (rocks ingests a large batch as SST files).
func (db *DB) leafChanges(changes []change, chain []vertexStore, removed *removals, pace *pacer) (leaves []vertex.LeafEntry, prefixes [][]byte, err error) {
	// Each put is a changed leaf's: room for as many as there are changes,
	// in the arena (pages are touched only as the puts fill them), where the
	// collector does not scan them and the entries' bytes are too.
	n := len(changes)
	d := &leafDiff{db: db, changes: changes, chain: chain, pace: pace, room: recordRoom{room: db.arena.Buffer}, puts: manual.Slice[vertex.LeafEntry](db.arena, n), storage: manual.Slice[vertex.ID](db.arena, n)}
	d.walkNew(vertex.RootID, d.nibbles(false), nil, 0)
	if removed.all {
		err = d.walkOld(vertex.RootID, d.nibbles(false), nil)
	} else {
		err = d.walkOldAccounts(removed.accounts)
		d.removedSlots(removed.slots)
	}
	if err != nil {
		return nil, nil, err
	}
	if len(d.dels) == 0 {
		return d.puts, d.prefix, nil // nothing removed: the puts are the changes
	}
	return mergeLeafChanges(d.puts, d.dels, func(n int) []vertex.LeafEntry { return manual.Slice[vertex.LeafEntry](db.arena, n) }), d.prefix, nil
}

// mergeLeafChanges merges the deletions dels into puts, as one list in key
// order, each key once, and returns it. The puts are sorted and distinct
// already; the deletions come in sorted runs (the old walk's, then the
// removed slots') that may repeat a key, and a key put again is never among
// them (where one were, the put would win, as it did when the deletions were
// applied first).
//
// The list is merged from the back into puts' own array when it has room
// for the deletions (a persist's has room for an entry per change), else
// into a new slice from grow: a second list of a 64-block persist's entries,
// beside the first, was ~25 MiB at the writer's peak at 10M accounts
// (docs/benchmarks.md §10.9).
func mergeLeafChanges(puts, dels []vertex.LeafEntry, grow func(n int) []vertex.LeafEntry) []vertex.LeafEntry {
	byKey := func(a, b vertex.LeafEntry) int { return bytes.Compare(a.Key, b.Key) }
	if !slices.IsSortedFunc(dels, byKey) {
		slices.SortFunc(dels, byKey)
	}
	dels = slices.CompactFunc(dels, func(a, b vertex.LeafEntry) bool { return bytes.Equal(a.Key, b.Key) })
	n := len(puts) + len(dels)
	out := puts[:cap(puts)]
	if cap(puts) < n {
		out = grow(n)[:n]
		copy(out, puts)
	}
	// out[:i+1] holds the puts not yet placed, and w is where the greatest
	// entry not yet placed goes. w-i is the deletions not yet placed plus
	// the ones skipped (a key put): while a deletion is left, w > i, and a
	// write to out[w] overwrites no put still to be read.
	i, j, w := len(puts)-1, len(dels)-1, n-1
	for j >= 0 {
		if i >= 0 {
			switch c := bytes.Compare(out[i].Key, dels[j].Key); {
			case c > 0:
				out[w] = out[i]
				i, w = i-1, w-1
				continue
			case c == 0:
				j--
				continue
			}
		}
		out[w] = dels[j]
		j, w = j-1, w-1
	}
	// The puts left are the least entries; they end just below out[w+1],
	// which a skipped deletion leaves w-i places above them.
	skipped := w - i
	copy(out[skipped:], out[:i+1])
	return out[skipped:n]
}

// removedSlots deletes the entries of removed slots, unless the new walk put
// them again (a slot written after its removal), in key order after the
// deletions the old walk found (a slot of an account deleted too is deleted
// twice: mergeLeafChanges keeps one; so is one that a later frame had added
// and removed).
func (d *leafDiff) removedSlots(slots []removedSlot) {
	cmpSlot := func(a, b removedSlot) int {
		if c := bytes.Compare(a.account[:], b.account[:]); c != 0 {
			return c
		}
		return bytes.Compare(a.slot[:], b.slot[:])
	}
	slices.SortFunc(slots, cmpSlot)
	slots = slices.Compact(slots)
	for _, s := range slots {
		d.pace.tick()
		key := d.room.keep(append(append(d.room.next(), s.account[:]...), s.slot[:]...))
		if d.put(key) < 0 {
			d.dels = append(d.dels, vertex.LeafEntry{Key: key})
		}
	}
}

// search returns the position of id in the sorted changes, or where it would
// be, and whether it is there.
func (d *leafDiff) search(id vertex.ID) (int, bool) {
	return slices.BinarySearchFunc(d.changes, id, func(c change, id vertex.ID) int { return cmp.Compare(c.id, id) })
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
	var nib [64]byte
	copy(nib[copy(nib[:], prefix):], path)
	for i := range 32 {
		dst = append(dst, nib[2*i]<<4|nib[2*i+1])
	}
	return dst, true
}

// walkNew walks the new versions of the changed vertices below id (at nibble
// path prefix, in owner's storage trie or the account trie, depth vertices
// below the account trie's root) and collects their leaves' entries.
func (d *leafDiff) walkNew(id vertex.ID, prefix []byte, owner *hashkey.Hash, depth int) {
	if i, ok := d.search(id); ok {
		if v := d.newVersion(i, depth); v != nil {
			d.walkNewFrom(v, prefix, owner, depth)
		}
	}
}

// newVersion returns change i's vertex (nil: deleted), a packed frame's
// record decoded into the walk's node for depth: the walk holds one vertex
// per level of its path at a time and keeps nothing of it (keys and values
// are copied into the arena), so it decodes without allocating.
func (d *leafDiff) newVersion(i, depth int) *node {
	v, rec := d.changes[i].version(d.chain)
	if rec == nil {
		return v
	}
	for len(d.path) <= depth {
		d.path = append(d.path, new(walkNode))
	}
	w := d.path[depth]
	w.n, w.acc = node{}, vertex.Account{}
	decodePackedInto(&w.n, &w.acc, w.buf[:0], rec)
	return &w.n
}

// walkNode is room for one decoded vertex of the new walk's path: the
// vertex, its account and its pieces (a branch's children's keys included).
type walkNode struct {
	n   node
	acc vertex.Account
	buf [640]byte
}

// walkNewFrom is walkNew from v, the new version of a changed vertex. A
// format-v2 branch's 16 slots are adjacent IDs, so its changed children are
// found with one search in the sorted changes instead of one per child.
func (d *leafDiff) walkNewFrom(v *node, prefix []byte, owner *hashkey.Hash, depth int) {
	if v.Kind == vertex.Branch {
		p := append(prefix, v.Path...)
		if v.Kids != nil {
			for n := range 16 {
				if c := v.Child(n); c != vertex.NoID {
					d.walkNew(c, append(p, byte(n)), owner, depth+1)
				}
			}
			return
		}
		i, _ := d.search(v.Base)
		for ; i < len(d.changes) && d.changes[i].id < v.Base+vertex.BranchSlots; i++ {
			n := d.changes[i].id - v.Base
			if v.Used&(1<<n) == 0 {
				continue
			}
			if c := d.newVersion(i, depth+1); c != nil {
				d.walkNewFrom(c, append(p, byte(n)), owner, depth+1)
			}
		}
		return
	}
	d.pace.tick()
	key, ok := appendLeafKey(d.room.next(), prefix, v.Path, owner)
	if !ok || (v.Payload != vertex.AccountPayload && v.Payload != vertex.SlotPayload) {
		return
	}
	key = d.room.keep(key)
	d.puts = append(d.puts, vertex.LeafEntry{Key: key, Val: d.room.keep(leafValue(d.room.next(), &v.Vertex))})
	d.storage = append(d.storage, vertex.NoID)
	if owner == nil && v.Acc != nil {
		h := hashkey.Hash(key)
		d.storage[len(d.storage)-1] = v.Acc.Storage
		if v.Acc.Storage != vertex.NoID {
			d.walkNew(v.Acc.Storage, d.nibbles(true), &h, depth+1)
		}
	}
}

// walkOld walks the old versions of the changed vertices below id and
// collects the entries of their leaves that the new walk did not reach.
func (d *leafDiff) walkOld(id vertex.ID, prefix []byte, owner *hashkey.Hash) error {
	if _, ok := d.search(id); !ok {
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
				if _, ok := d.search(c); !ok {
					continue
				}
				if err := d.walkOld(c, append(p, byte(n)), owner); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return d.oldLeaf(v, prefix, owner)
}

// walkOldAccounts is walkOld down the paths of accounts only (sorted here,
// so that the deletions come out in key order): the old leaf on each path,
// when it is that account's, is handled as walkOld handles it.
func (d *leafDiff) walkOldAccounts(accounts []hashkey.Hash) error {
	slices.SortFunc(accounts, func(a, b hashkey.Hash) int { return bytes.Compare(a[:], b[:]) })
	accounts = slices.Compact(accounts)
	var nb [64]byte
	for i := range accounts {
		path := hashkey.AppendNibbles(nb[:0], accounts[i][:])
		v, depth, err := d.oldLeafOn(path)
		if err != nil {
			return err
		}
		if v != nil && bytes.Equal(v.Path, path[depth:]) {
			if err := d.oldLeaf(v, path[:depth], nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// oldLeafOn returns the stored leaf that the account trie's nibble path
// leads to through changed vertices only, and the depth of that leaf (nil
// when the path leaves the changed vertices or the old trie first: the
// persist did not change what the backend holds there).
func (d *leafDiff) oldLeafOn(path []byte) (*node, int, error) {
	id, depth := vertex.RootID, 0
	for {
		if _, ok := d.search(id); !ok {
			return nil, 0, nil
		}
		v, err := d.db.storedVertex(id)
		if err != nil || v == nil {
			return nil, 0, err
		}
		if v.Kind == vertex.Leaf {
			return v, depth, nil
		}
		rest := path[depth:]
		if len(rest) <= len(v.Path) || !bytes.HasPrefix(rest, v.Path) {
			return nil, 0, nil
		}
		depth += len(v.Path)
		if id = v.Child(int(path[depth])); id == vertex.NoID {
			return nil, 0, nil
		}
		depth++
	}
}

// oldLeaf handles an old leaf v at nibble path prefix (in owner's storage
// trie, or the account trie): its entry is deleted unless the new walk put
// it, and an account's old slots go with a prefix delete when its storage
// trie was dropped or replaced, or are walked when it was changed.
func (d *leafDiff) oldLeaf(v *node, prefix []byte, owner *hashkey.Hash) error {
	d.pace.tick()
	key, ok := appendLeafKey(d.room.next(), prefix, v.Path, owner)
	if !ok || (v.Payload != vertex.AccountPayload && v.Payload != vertex.SlotPayload) {
		return nil
	}
	key = d.room.keep(key)
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
	if v, ok, err := db.loadCached(id); ok || err != nil {
		return v, err
	}
	v, _, err := db.readStored(id)
	return v, err
}
