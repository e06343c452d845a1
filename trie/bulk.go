package trie

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"

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
func (fr *Frame) BulkLoadAccounts(accounts []AccountLeaf) error {
	if err := fr.enter(useWrite, "bulk load accounts"); err != nil {
		return err
	}
	defer fr.leave(useWrite)
	if err := fr.checkEmpty(); err != nil {
		return err
	}
	nslots := 0
	for i := range accounts {
		if i > 0 && bytes.Compare(accounts[i-1].AddrHash[:], accounts[i].AddrHash[:]) >= 0 {
			return fmt.Errorf("%w: account %d (%v) is not above the one before", ErrBulkLoad, i, accounts[i].AddrHash)
		}
		if err := checkStorage(&accounts[i]); err != nil {
			return err
		}
		nslots += len(accounts[i].Storage)
	}
	b := newBulkBuilder(fr, len(accounts)+nslots)
	accs := make([]vertex.Account, len(accounts))
	leaves := make([]bulkLeaf, len(accounts))
	slots := make([]bulkLeaf, 0, nslots)
	for i := range accounts {
		a := &accounts[i]
		accs[i] = a.Account.vertexAccount()
		start := len(slots)
		for j := range a.Storage {
			val := a.Storage[j].Value.Bytes32()
			slots = append(slots, b.leaf(a.Storage[j].Hash[:], vertex.SlotPayload, fr.copyValue(trimLeadingZeros(val[:])), nil))
		}
		leaves[i] = b.leaf(a.AddrHash[:], vertex.AccountPayload, nil, &accs[i])
		leaves[i].storage = slots[start:len(slots):len(slots)] // built just before the account's leaf
	}
	return b.buildRoot(leaves)
}

// bulkLoad builds the generic trie of an empty frame from keys sorted strictly
// increasing and their non-empty values. It fails, changing nothing, on unsorted
// or duplicate keys, empty values, or a frame whose trie is not empty.
func (fr *Frame) bulkLoad(keys, values [][]byte) error {
	if err := fr.enter(useWrite, "bulk load"); err != nil {
		return err
	}
	defer fr.leave(useWrite)
	if len(keys) != len(values) {
		return fmt.Errorf("%w: %d keys but %d values", ErrBulkLoad, len(keys), len(values))
	}
	if err := fr.checkEmpty(); err != nil {
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
	b := newBulkBuilder(fr, len(keys))
	leaves := make([]bulkLeaf, len(keys))
	for i := range keys {
		leaves[i] = b.leaf(keys[i], vertex.RawPayload, fr.copyValue(values[i]), nil)
	}
	return b.buildRoot(leaves)
}

// checkStorage returns an error wrapping ErrBulkLoad when a's storage has a
// zero value or a slot not above the one before.
func checkStorage(a *AccountLeaf) error {
	s := a.Storage
	for j := range s {
		if s[j].Value.IsZero() {
			return fmt.Errorf("%w: account %v slot %v is zero", ErrBulkLoad, a.AddrHash, s[j].Hash)
		}
		if j > 0 && bytes.Compare(s[j-1].Hash[:], s[j].Hash[:]) >= 0 {
			return fmt.Errorf("%w: account %v slot %d is not above the one before", ErrBulkLoad, a.AddrHash, j)
		}
	}
	return nil
}

func (fr *Frame) checkEmpty() error {
	v, err := fr.get(vertex.RootID)
	if err == nil && v != nil {
		err = fmt.Errorf("%w: the trie is not empty", ErrBulkLoad)
	}
	return err
}

// bulkLeaf is a leaf waiting for its place: its full nibble path, its vertex
// and, for an account, the leaves of its storage trie.
type bulkLeaf struct {
	path    []byte
	v       *vertex.Vertex
	storage []bulkLeaf
}

// bulkParallelMin is how many leaves a load needs before the root's sub-tries
// are built by parallel workers.
const bulkParallelMin = 4096

// bulkBuilder builds sub-tries bottom-up. Parallel builders each take IDs from a
// range of their own (alloc) and write only those slots of the frame's fresh-ID
// slice, which is sized for the whole load before they start; they share nothing
// else that is written.
type bulkBuilder struct {
	fr       *Frame
	h        hasher
	alloc    vertex.Allocator
	branches []vertex.Vertex // slab of new branches
	leaves   []vertex.Vertex // slab of leaves (the serial preparation's)
}

func newBulkBuilder(fr *Frame, leaves int) *bulkBuilder {
	// Reserve the frame's fresh-ID slice: a v2 branch takes 16 IDs and random keys
	// give about one branch per three leaves; v1 takes one ID per vertex.
	ids := 2 * leaves
	if fr.db.format == vertex.FormatV2 {
		ids = 6 * leaves
	}
	fr.vtx.Reserve(ids)
	return &bulkBuilder{fr: fr, h: hasher{fr: fr}, alloc: fr.alloc, leaves: make([]vertex.Vertex, 0, leaves)}
}

func (b *bulkBuilder) leaf(key []byte, kind vertex.PayloadKind, value []byte, acc *vertex.Account) bulkLeaf {
	b.leaves = append(b.leaves, vertex.Vertex{Kind: vertex.Leaf, Payload: kind, Value: value, Acc: acc})
	return bulkLeaf{path: b.fr.keyNibbles(key), v: &b.leaves[len(b.leaves)-1]}
}

// bulkRun is one child sub-trie of the root, built by one worker.
type bulkRun struct {
	id     vertex.ID
	n      byte
	leaves []bulkLeaf
	ids    int       // IDs it takes
	top    vertex.ID // the allocator's top before it
	key    hashkey.Key
	err    error
}

// buildRoot builds leaves (sorted, the whole trie) at the root. A large load
// whose root is a branch is split into the root's child sub-tries, built in
// parallel by the database's workers; the IDs each takes are counted first
// (ids) so that each gets its own range, in key order: the IDs are those a
// serial build takes, whatever the number of workers.
func (b *bulkBuilder) buildRoot(leaves []bulkLeaf) error {
	fr := b.fr
	if !b.parallel(len(leaves)) {
		// Serial: no counting pass; the frame's slice grows as IDs are taken.
		_, err := b.build(vertex.RootID, leaves, 0)
		fr.alloc = b.alloc
		return err
	}
	first, last := leaves[0].path, leaves[len(leaves)-1].path
	d := commonPrefix(first, last)
	br := b.newBranch(first[:d])
	if len(first) == d { // the first key ends at the root: it is the root's value
		setPayload(br, leaves[0].v)
		leaves = leaves[1:]
	}
	var runs []bulkRun
	eachRun(leaves, d, func(n byte, run []bulkLeaf) { runs = append(runs, bulkRun{n: n, leaves: run}) })
	workers := b.workers()
	forEach(len(runs), workers, func(i int) { runs[i].ids = b.ids(runs[i].leaves, d+1) })
	for i := range runs { // IDs in the order a serial build takes them
		runs[i].id = b.addChild(br, runs[i].n)
		runs[i].top = b.alloc.Top
		b.alloc.Top += vertex.ID(runs[i].ids)
	}
	fr.vtx.Extend(b.alloc.Top)
	forEach(len(runs), workers, func(i int) {
		r := &runs[i]
		w := &bulkBuilder{fr: fr, h: hasher{fr: fr}, alloc: vertex.Allocator{Top: r.top}}
		r.key, r.err = w.build(r.id, r.leaves, d+1)
	})
	var kids [16]hashkey.Key
	for _, r := range runs {
		if r.err != nil {
			return r.err
		}
		kids[r.n] = r.key
	}
	fr.alloc = b.alloc
	return b.finishBranch(vertex.RootID, br, &kids)
}

// buildStorage builds the storage trie of account a (nil for a leaf that is
// not an account) from its leaves and returns its root hash (EmptyRoot when
// there are none).
func (b *bulkBuilder) buildStorage(a *vertex.Account, storage []bulkLeaf) (hashkey.Hash, error) {
	if len(storage) == 0 {
		return hashkey.EmptyRoot, nil
	}
	a.Storage = b.alloc.Take(1)
	k, err := b.build(a.Storage, storage, 0)
	return k.Hash(), err
}

func (b *bulkBuilder) workers() int {
	if w := b.fr.db.workers; w > 0 {
		return w
	}
	return runtime.GOMAXPROCS(0)
}

// parallel reports whether a load of n leaves is built by parallel workers.
func (b *bulkBuilder) parallel(n int) bool { return n >= bulkParallelMin && b.workers() > 1 }

// forEach calls fn(0..n-1) on up to workers goroutines.
func forEach(n, workers int, fn func(i int)) {
	if workers <= 1 || n <= 1 {
		for i := 0; i < n; i++ {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// eachRun calls fn for each run of leaves (sorted, all sharing path[:d], none
// ending at d) with the same nibble at d, in order. Runs are found by binary
// search: they are long near the root.
func eachRun(leaves []bulkLeaf, d int, fn func(n byte, run []bulkLeaf)) {
	for len(leaves) > 0 {
		n, end := nextRun(leaves, d)
		fn(n, leaves[:end])
		leaves = leaves[end:]
	}
}

// nextRun returns the nibble at d of the first of leaves and the length of the
// run of leaves that share it, found by binary search: runs are long near the root.
func nextRun(leaves []bulkLeaf, d int) (byte, int) {
	n := leaves[0].path[d]
	return n, 1 + sort.Search(len(leaves)-1, func(i int) bool { return leaves[i+1].path[d] != n })
}

// ids returns how many IDs build takes for leaves (sorted, sharing path[:depth])
// placed at an existing ID: build's recursion without its work.
func (b *bulkBuilder) ids(leaves []bulkLeaf, depth int) int {
	switch len(leaves) {
	case 0:
		return 0
	case 1:
		if s := leaves[0].storage; len(s) > 0 {
			return 1 + b.ids(s, 0) // the storage root's ID, then its trie
		}
		return 0
	}
	v1 := b.fr.db.format == vertex.FormatV1
	first, last := leaves[0].path, leaves[len(leaves)-1].path
	d := depth + commonPrefix(first[depth:], last[depth:])
	n := 0
	if !v1 {
		n = vertex.BranchSlots
	}
	if len(first) == d {
		leaves = leaves[1:]
	}
	eachRun(leaves, d, func(_ byte, run []bulkLeaf) {
		if v1 {
			n++
		}
		n += b.ids(run, d+1)
	})
	return n
}

// build places leaves (sorted, all sharing path[:depth]) as the sub-trie rooted
// at id and returns its key. Because the leaves are sorted, their common prefix is
// that of the first and the last, and each child's leaves are a contiguous run.
// An account's storage trie is built (and hashed) just before its leaf.
func (b *bulkBuilder) build(id vertex.ID, leaves []bulkLeaf, depth int) (hashkey.Key, error) {
	if len(leaves) == 0 {
		return hashkey.Key{}, nil // an empty load leaves the trie empty
	}
	if len(leaves) == 1 {
		l := leaves[0]
		v := l.v
		root, err := b.buildStorage(v.Acc, l.storage)
		if err != nil {
			return hashkey.Key{}, err
		}
		v.Path = l.path[depth:]
		v.Key = b.h.leafKey(v, &root)
		b.set(id, v)
		return v.Key, nil
	}
	first, last := leaves[0].path, leaves[len(leaves)-1].path
	d := depth + commonPrefix(first[depth:], last[depth:])
	br := b.newBranch(first[depth:d])
	if len(first) == d { // the first key ends here: it is the branch's value
		setPayload(br, leaves[0].v)
		leaves = leaves[1:]
	}
	var kids [16]hashkey.Key
	for len(leaves) > 0 {
		n, end := nextRun(leaves, d)
		k, err := b.build(b.addChild(br, n), leaves[:end], d+1)
		if err != nil {
			return k, err
		}
		kids[n] = k
		leaves = leaves[end:]
	}
	err := b.finishBranch(id, br, &kids)
	return br.Key, err
}

// finishBranch hashes branch br from its children's keys and places it at id.
func (b *bulkBuilder) finishBranch(id vertex.ID, br *vertex.Vertex, kids *[16]hashkey.Key) error {
	inner, outer, err := b.h.encodeBranch(br, kids)
	if err != nil {
		return err
	}
	br.Key = b.h.nodeKey(inner, outer)
	b.set(id, br)
	return nil
}

func (b *bulkBuilder) newBranch(p []byte) *vertex.Vertex {
	br := take(&b.branches, 256)
	initBranch(br, p, b.fr.db.format, &b.alloc, nil)
	return br
}

func (b *bulkBuilder) addChild(br *vertex.Vertex, n byte) vertex.ID { return addChild(br, n, &b.alloc) }

// set places v at id: a fresh ID in the slot sized for it (race-free between
// builders, whose IDs differ), the root through the frame's map.
func (b *bulkBuilder) set(id vertex.ID, v *vertex.Vertex) {
	if !b.fr.vtx.SetSized(id, v) {
		b.fr.vtx.Set(id, v)
	}
}
