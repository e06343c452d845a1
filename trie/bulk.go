package trie

import (
	"bytes"
	"errors"
	"fmt"
	"sort"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/vertex"
	"github.com/holiman/uint256"
)

// Bulk loading builds a trie from leaves sorted by key in one bottom-up pass, the
// way snap sync delivers state: every vertex is created once, in its final place,
// and hashed as soon as its children are, with no lookups, no splits and no
// re-hashing. IDs are handed out in key order, so in both layouts a sub-trie's
// vertices are close together.

// ErrBulkLoad is wrapped by every error of a bulk load's input.
var ErrBulkLoad = errors.New("trie: bulk load")

// AccountLeaf is one account of a bulk load, with its storage.
type AccountLeaf struct {
	AddrHash hashkey.Hash
	Account  Account
	Storage  []SlotLeaf // sorted by Hash, non-zero values
}

// SlotLeaf is one storage slot of a bulk load.
type SlotLeaf struct {
	Hash  hashkey.Hash
	Value uint256.Int
}

// BulkLoadAccounts builds the state trie of an empty frame from accounts sorted by
// AddrHash (strictly increasing), each with its storage sorted by slot hash. It
// fails, changing nothing, on unsorted or duplicate keys, zero slot values, or a
// frame whose state is not empty.
func (tx *Tx) BulkLoadAccounts(accounts []AccountLeaf) error {
	tx.db.mu.RLock()
	defer tx.db.mu.RUnlock()
	if err := tx.check(true); err != nil {
		return err
	}
	if err := tx.checkEmpty(); err != nil {
		return err
	}
	nslots := 0
	for i := range accounts {
		if i > 0 && bytes.Compare(accounts[i-1].AddrHash[:], accounts[i].AddrHash[:]) >= 0 {
			return fmt.Errorf("%w: account %d (%v) is not above the one before", ErrBulkLoad, i, accounts[i].AddrHash)
		}
		s := accounts[i].Storage
		for j := range s {
			if s[j].Value.IsZero() {
				return fmt.Errorf("%w: account %v slot %v is zero", ErrBulkLoad, accounts[i].AddrHash, s[j].Hash)
			}
			if j > 0 && bytes.Compare(s[j-1].Hash[:], s[j].Hash[:]) >= 0 {
				return fmt.Errorf("%w: account %v slot %d is not above the one before", ErrBulkLoad, accounts[i].AddrHash, j)
			}
		}
		nslots += len(s)
	}
	b := newBulkBuilder(tx, len(accounts)+nslots)
	accs := make([]vertex.Account, len(accounts))
	leaves := make([]bulkLeaf, len(accounts))
	var slots []bulkLeaf
	for i := range accounts {
		a := &accounts[i]
		accs[i] = vertex.Account{Nonce: a.Account.Nonce, Balance: a.Account.Balance, CodeHash: a.Account.CodeHash}
		if accs[i].CodeHash == (hashkey.Hash{}) {
			accs[i].CodeHash = hashkey.EmptyCodeHash
		}
		if len(a.Storage) > 0 {
			slots = slots[:0]
			for j := range a.Storage {
				val := a.Storage[j].Value.Bytes32()
				slots = append(slots, b.leaf(a.Storage[j].Hash[:], vertex.SlotPayload, tx.copyValue(trimLeadingZeros(val[:])), nil))
			}
			accs[i].Storage = tx.alloc.Take(1)
			if _, err := b.build(accs[i].Storage, slots, 0); err != nil {
				return err
			}
		}
		leaves[i] = b.leaf(a.AddrHash[:], vertex.AccountPayload, nil, &accs[i])
	}
	_, err := b.build(vertex.RootID, leaves, 0)
	return err
}

// BulkLoad builds the generic trie of an empty frame from keys sorted strictly
// increasing and their non-empty values. It fails, changing nothing, on unsorted
// or duplicate keys, empty values, or a frame whose trie is not empty.
func (tx *Tx) BulkLoad(keys, values [][]byte) error {
	tx.db.mu.RLock()
	defer tx.db.mu.RUnlock()
	if err := tx.check(true); err != nil {
		return err
	}
	if len(keys) != len(values) {
		return fmt.Errorf("%w: %d keys but %d values", ErrBulkLoad, len(keys), len(values))
	}
	if err := tx.checkEmpty(); err != nil {
		return err
	}
	for i := range keys {
		if len(values[i]) == 0 {
			return fmt.Errorf("%w: empty value for key %x", ErrBulkLoad, keys[i])
		}
		if i > 0 && bytes.Compare(keys[i-1], keys[i]) >= 0 {
			return fmt.Errorf("%w: key %d (%x) is not above the one before", ErrBulkLoad, i, keys[i])
		}
	}
	b := newBulkBuilder(tx, len(keys))
	leaves := make([]bulkLeaf, len(keys))
	for i := range keys {
		leaves[i] = b.leaf(keys[i], vertex.RawPayload, tx.copyValue(values[i]), nil)
	}
	_, err := b.build(vertex.RootID, leaves, 0)
	return err
}

func (tx *Tx) checkEmpty() error {
	v, err := tx.get(vertex.RootID)
	if err == nil && v != nil {
		err = fmt.Errorf("%w: the trie is not empty", ErrBulkLoad)
	}
	return err
}

// bulkLeaf is a leaf waiting for its place: its full nibble path and its vertex.
type bulkLeaf struct {
	path []byte
	v    *vertex.Vertex
}

type bulkBuilder struct {
	tx   *Tx
	h    hasher
	slab []vertex.Vertex // leaves, allocated together
}

func newBulkBuilder(tx *Tx, leaves int) *bulkBuilder {
	// Reserve the frame's fresh-ID slice: a v2 branch takes 16 IDs and random keys
	// give about one branch per three leaves; v1 takes one ID per vertex.
	ids := 2 * leaves
	if tx.db.format == vertex.FormatV2 {
		ids = 6 * leaves
	}
	tx.vtx.reserve(ids)
	return &bulkBuilder{tx: tx, h: hasher{tx: tx}, slab: make([]vertex.Vertex, 0, leaves)}
}

func (b *bulkBuilder) leaf(key []byte, kind vertex.PayloadKind, value []byte, acc *vertex.Account) bulkLeaf {
	b.slab = append(b.slab, vertex.Vertex{Kind: vertex.Leaf, Payload: kind, Value: value, Acc: acc})
	return bulkLeaf{path: b.tx.keyNibbles(key), v: &b.slab[len(b.slab)-1]}
}

// build places leaves (sorted, all sharing path[:depth]) as the sub-trie rooted
// at id and returns its key. Because the leaves are sorted, their common prefix is
// that of the first and the last, and each child's leaves are a contiguous run.
func (b *bulkBuilder) build(id vertex.ID, leaves []bulkLeaf, depth int) (hashkey.Key, error) {
	tx := b.tx
	if len(leaves) == 0 {
		return hashkey.Key{}, nil // an empty load leaves the trie empty
	}
	if len(leaves) == 1 {
		v := leaves[0].v
		v.Path = leaves[0].path[depth:]
		inner, outer, err := b.h.encode(v, nil)
		if err != nil {
			return hashkey.Key{}, err
		}
		v.Key = b.h.nodeKey(inner, outer)
		tx.vtx.set(id, v)
		return v.Key, nil
	}
	first, last := leaves[0].path, leaves[len(leaves)-1].path
	d := depth + commonPrefix(first[depth:], last[depth:])
	br := tx.newBranch(first[depth:d])
	if len(first) == d { // the first key ends here: it is the branch's value
		setPayload(br, leaves[0].v)
		leaves = leaves[1:]
	}
	var kids [16]hashkey.Key
	for len(leaves) > 0 {
		n := leaves[0].path[d]
		// The run of nibble n, found by binary search: runs are long near the root.
		end := 1 + sort.Search(len(leaves)-1, func(i int) bool { return leaves[i+1].path[d] != n })
		k, err := b.build(tx.addChild(br, n), leaves[:end], d+1)
		if err != nil {
			return k, err
		}
		kids[n] = k
		leaves = leaves[end:]
	}
	inner, outer, err := b.h.encodeBranch(br, &kids)
	if err != nil {
		return hashkey.Key{}, err
	}
	br.Key = b.h.nodeKey(inner, outer)
	tx.vtx.set(id, br)
	return br.Key, nil
}
