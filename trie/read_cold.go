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
	for f := fr; f != nil; f = f.parent {
		if v, ok := f.vtx.Lookup(id); ok {
			return v, true, nil
		}
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

// readLeaf reads the index entry of key, of kind want (nil when absent).
func (fr *Frame) readLeaf(key []byte, want vertex.PayloadKind, c *coldRead) (*node, error) {
	c.keys++
	val, err := fr.db.backend.Leaf(key)
	if err != nil || val == nil {
		return nil, err
	}
	return decodeLeafValue(key, val, want)
}

// account is Account's read: the account's leaf or its index entry.
func (fr *Frame) account(addrHash hashkey.Hash) (*node, error) {
	var c coldRead
	defer c.count(fr.db)
	v, cold, err := fr.readAccount(addrHash, &c)
	if cold {
		return fr.readLeaf(accountLeafKey(addrHash), vertex.AccountPayload, &c)
	}
	return v, err
}

// storage is Storage's read: the slot's leaf or its index entry (nil when
// the slot or the account does not exist).
func (fr *Frame) storage(addrHash, slotHash hashkey.Hash) (*node, error) {
	var c coldRead
	defer c.count(fr.db)
	a, cold, err := fr.readAccount(addrHash, &c)
	if cold {
		// An account absent from the index has no slots there either.
		return fr.readLeaf(slotLeafKey(addrHash, slotHash), vertex.SlotPayload, &c)
	}
	if a == nil || err != nil || a.Acc.Storage == vertex.NoID {
		return nil, err
	}
	var nb [64]byte
	v, cold, err := fr.walk(a.Acc.Storage, hashkey.AppendNibbles(nb[:0], slotHash[:]), true, &c)
	if cold {
		return fr.readLeaf(slotLeafKey(addrHash, slotHash), vertex.SlotPayload, &c)
	}
	return v, err
}
