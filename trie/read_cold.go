package trie

import (
	"sync/atomic"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/vertex"
)

// The read path of Account and Storage: the trie is walked while its
// vertices are in memory (the frames, a pending write, the vertex cache);
// the first vertex that only the backend holds makes the read cold, and a
// cold read with a leaf index reads the one index entry of the key instead
// of the rest of the path. That is sound because a vertex no frame and no
// pending write holds has not changed below the persisted state, and so
// neither has anything below it (every write changes the whole path from the
// root): the index, kept by persist in step with the backend's records, then
// answers for that part of the trie. Without an index the walk reads the
// rest of the path from the backend, one vertex at a time.

// coldRead is what one lookup read from the backend.
type coldRead struct {
	cold bool   // it needed the backend
	keys uint64 // keys it read there
}

// lookupCounters counts the lookups of Account and Storage.
type lookupCounters struct {
	lookups, cold, keys atomic.Uint64
}

// LookupStats counts Account and Storage lookups: all of them, those that
// needed the backend (cold), and the backend keys those read (vertex reads,
// or leaf-index reads). ColdKeys/Cold is the cost of a cold lookup.
type LookupStats struct {
	Lookups, Cold, ColdKeys uint64
}

// LookupStats reports the Account and Storage lookups served so far.
func (db *DB) LookupStats() LookupStats {
	return LookupStats{Lookups: db.lookups.lookups.Load(), Cold: db.lookups.cold.Load(), ColdKeys: db.lookups.keys.Load()}
}

// count adds c's lookup to the database's counters.
func (c *coldRead) count(db *DB) {
	db.lookups.lookups.Add(1)
	if c.cold {
		db.lookups.cold.Add(1)
		db.lookups.keys.Add(c.keys)
	}
}

// getWarm is get when memory holds id: ok is false when only the backend may.
func (fr *Frame) getWarm(id vertex.ID) (*node, bool, error) {
	if v, ok := fr.inChain(id); ok {
		return v, true, nil
	}
	return fr.db.loadWarm(id)
}

// lookupCold is lookup for walk: with c nil it is lookup; else a vertex not
// in memory makes the read cold, and is read from the backend (one key) only
// when the database has no leaf index (cold is then false).
func (fr *Frame) lookupCold(id vertex.ID, must bool, c *coldRead) (v *node, cold bool, err error) {
	if c == nil {
		v, err = fr.lookup(id, must)
		return v, false, err
	}
	v, ok, err := fr.getWarm(id)
	if err != nil {
		return nil, false, err
	}
	if !ok {
		c.cold = true
		if fr.db.leafIdx {
			return nil, true, nil
		}
		c.keys++
		if v, err = fr.db.loadStored(id); err != nil {
			return nil, false, err
		}
	}
	if v == nil && must {
		return nil, false, vertexError(id, ErrMissingVertex)
	}
	return v, false, nil
}

// readAccount returns the leaf of the account at addrHash (nil when absent),
// or cold when the index must answer.
func (fr *Frame) readAccount(addrHash hashkey.Hash, c *coldRead) (*node, bool, error) {
	var nb [64]byte
	v, cold, err := fr.walk(vertex.RootID, hashkey.AppendNibbles(nb[:0], addrHash[:]), false, c)
	if v != nil && v.Payload != vertex.AccountPayload {
		return nil, false, vertexError(vertex.RootID, errNotAccount)
	}
	return v, cold, err
}

// readLeaf reads the index entry of key, of kind want (nil when absent),
// from what Prefetch read ahead (a lookup that needed no backend read) or
// the backend.
func (fr *Frame) readLeaf(key []byte, want vertex.PayloadKind, c *coldRead) (*node, error) {
	val, ok := fr.db.leaves.get(key)
	if ok {
		c.cold = false
	} else {
		c.keys++
		var err error
		if val, err = fr.db.backend.Leaf(key); err != nil {
			return nil, err
		}
	}
	if val == nil {
		return nil, nil
	}
	return decodeLeafValue(key, val, want)
}

// locate finds the account at addrHash (slot nil) or its slot: the leaf when
// memory (or, without an index, the backend) holds its path, nil when it does
// not exist, or else the index key that answers it (cold).
func (fr *Frame) locate(addrHash hashkey.Hash, slot *hashkey.Hash, c *coldRead) (v *node, coldKey []byte, err error) {
	key := func() []byte {
		if slot == nil {
			return accountLeafKey(addrHash)
		}
		return slotLeafKey(addrHash, *slot) // an account absent from the index has no slots there either
	}
	a, cold, err := fr.readAccount(addrHash, c)
	if cold {
		return nil, key(), nil
	}
	if slot == nil || a == nil || err != nil || a.Acc.Storage == vertex.NoID {
		return a, nil, err
	}
	var nb [64]byte
	v, cold, err = fr.walk(a.Acc.Storage, hashkey.AppendNibbles(nb[:0], slot[:]), true, c)
	if cold {
		return nil, key(), nil
	}
	return v, nil, err
}

// read is Account's (slot nil) and Storage's read: the leaf, or the value of
// its index entry.
func (fr *Frame) read(addrHash hashkey.Hash, slot *hashkey.Hash) (*node, error) {
	var c coldRead
	defer c.count(fr.db)
	v, key, err := fr.locate(addrHash, slot, &c)
	if key == nil || err != nil {
		return v, err
	}
	want := vertex.AccountPayload
	if slot != nil {
		want = vertex.SlotPayload
	}
	return fr.readLeaf(key, want, &c)
}
