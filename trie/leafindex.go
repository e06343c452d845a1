package trie

import (
	"slices"

	"fmt"
	"github.com/hexstate/hexstate/trie/internal/nodeenc"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/vertex"
)

// The leaf index (docs/format.md §10, design in docs/design.md): one backend
// entry per account, keyed by its 32-byte account hash, and one per storage
// slot, keyed by account hash and slot hash (64 bytes), whose value is the
// leaf's record with an empty path and no storage ID. A cold Account or
// Storage reads that one entry instead of the trie path down to the leaf.
// Persist keeps it in step with the records, in the same batch; a marker
// entry says it is complete, and without the marker (a store written before
// the index existed, or a build cut short) reads go through the trie.

// leafMarkerKey is the leaf index's marker entry; leafMarkerValue its value
// (the index's layout version).
var (
	leafMarkerKey   = []byte("leafindex")
	leafMarkerValue = []byte{1}
)

// accountLeafKey returns the index key of an account.
func accountLeafKey(addrHash hashkey.Hash) []byte { return addrHash[:] }

// slotLeafKey returns the index key of a storage slot.
func slotLeafKey(addrHash, slotHash hashkey.Hash) []byte {
	k := make([]byte, 64)
	copy(k, addrHash[:])
	copy(k[32:], slotHash[:])
	return k
}

// leafValue appends the index value of leaf v (an account or slot leaf) to
// dst: its record with an empty path and, for an account, no storage ID.
func leafValue(dst []byte, v *vertex.Vertex) []byte {
	l := vertex.Vertex{Kind: vertex.Leaf, Payload: v.Payload, Value: v.Value}
	if v.Acc != nil {
		a := *v.Acc
		a.Storage = vertex.NoID
		l.Acc = &a
	}
	return vertex.Encode(dst, &l)
}

// decodeLeafValue decodes an index value of kind want, read under key.
func decodeLeafValue(key, val []byte, want vertex.PayloadKind) (*node, error) {
	n, acc, buf := newNode()
	if err := decodeLeafValueInto(&n.Vertex, acc, buf, key, val, want); err != nil {
		return nil, err
	}
	return n, nil
}

// decodeLeafValueInto is decodeLeafValue into v (and acc for an account),
// which the caller may reuse, and buf for v's pieces (vertex.DecodeIntoBuf):
// a caller that reuses a buffer of decodeRoom bytes too checks a whole index
// without allocating.
func decodeLeafValueInto(v *vertex.Vertex, acc *vertex.Account, buf, key, val []byte, want vertex.PayloadKind) error {
	*v, *acc = vertex.Vertex{}, vertex.Account{}
	err := vertex.DecodeIntoBuf(v, acc, val, buf)
	if err == nil && (v.Kind != vertex.Leaf || v.Payload != want || len(v.Path) != 0 || (v.Acc != nil && v.Acc.Storage != vertex.NoID)) {
		err = &vertex.CorruptError{Reason: "not a leaf-index value of its kind"}
	}
	if err != nil {
		return fmt.Errorf("trie: leaf index entry %x: %w", key, err)
	}
	return nil
}

// readLeafMarker reports whether b's leaf index is complete.
func readLeafMarker(b Backend) (bool, error) {
	v, err := b.Leaf(leafMarkerKey)
	if err != nil {
		return false, fmt.Errorf("trie: reading the leaf index marker: %w", err)
	}
	return v != nil, nil
}

// HasLeafIndex reports whether the database reads cold accounts and slots
// through its leaf index (see BuildLeafIndex).
func (db *DB) HasLeafIndex() bool {
	db.mu.RLock()
	defer db.mu.RUnlock()
	return db.leafIdx
}

// addLeaves adds the index entries of account a and its slots to the batch
// being filled.
func (w *loadWriter) addLeaves(a *AccountLeaf) {
	b := &w.cur.batch
	acc := a.Account.vertexAccount()
	v := vertex.Vertex{Kind: vertex.Leaf, Payload: vertex.AccountPayload, Acc: &acc}
	b.Leaves = append(b.Leaves, vertex.LeafEntry{Key: slices.Clone(accountLeafKey(a.AddrHash)), Val: leafValue(nil, &v)})
	for i := range a.Storage {
		s := &a.Storage[i]
		val := s.Value.Bytes32()
		v := vertex.Vertex{Kind: vertex.Leaf, Payload: vertex.SlotPayload, Value: nodeenc.TrimLeadingZeros(val[:])}
		b.Leaves = append(b.Leaves, vertex.LeafEntry{Key: slotLeafKey(a.AddrHash, s.Hash), Val: leafValue(nil, &v)})
	}
}
