package trie

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie/internal/build"
	"github.com/hexstate/hexstate/trie/internal/nodeenc"
	"github.com/hexstate/hexstate/vertex"
	"github.com/holiman/uint256"
)

// Bulk loading builds a trie from leaves sorted by key in one bottom-up pass, the
// way snap sync delivers state: every vertex is created once, in its final place,
// and hashed as soon as its children are, with no lookups, no splits and no
// re-hashing. It uses the builder of every sorted-input path (build.Builder,
// driven by buildSorted), so a frame's bulk load and a StateLoader fed the same
// accounts make the same records, IDs included.

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
// frame whose state is not empty. The Persist that writes the frame waits for
// its write and compacts the store (see Compactor) before it returns.
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
	fr.vtx.Reserve(bulkReserve(fr.db.format, len(accounts)+nslots))
	if err := fr.buildSorted(accountInput(accounts)); err != nil {
		return err
	}
	fr.built = true
	return nil
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
	fr.vtx.Reserve(bulkReserve(fr.db.format, len(keys)))
	return fr.buildSorted(rawInput{keys, values})
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

// bulkReserve is about how many fresh IDs a load of n leaves takes: a v2
// branch takes 16 IDs and random keys give about one branch per three leaves;
// v1 takes one ID per vertex.
func bulkReserve(f vertex.Format, n int) int {
	if f == vertex.FormatV2 {
		return 6 * n
	}
	return 2 * n
}

// accountInput is the input of BulkLoadAccounts.
type accountInput []AccountLeaf

func (a accountInput) len() int         { return len(a) }
func (a accountInput) key(i int) []byte { return a[i].AddrHash[:] }
func (a accountInput) value(int) []byte { return nil }
func (a accountInput) add(w *bulkWorker, i int) error {
	return addAccount(w.main, w.slots, &a[i], &w.nib)
}
func (a accountInput) storageIDs(c *build.Counter, f vertex.Format, i int) int {
	return storageIDs(c, f, &a[i])
}

// rawInput is the input of the generic bulk load.
type rawInput struct{ keys, values [][]byte }

func (r rawInput) len() int                                          { return len(r.keys) }
func (r rawInput) key(i int) []byte                                  { return r.keys[i] }
func (r rawInput) value(i int) []byte                                { return r.values[i] }
func (r rawInput) storageIDs(*build.Counter, vertex.Format, int) int { return 0 }
func (r rawInput) add(w *bulkWorker, i int) error {
	w.nib = hashkey.AppendNibbles(w.nib[:0], r.keys[i])
	return w.main.Add(w.nib, vertex.RawPayload, r.values[i], nil)
}

// addAccount adds account a to accts, then builds its storage trie, if any,
// with slots (which shares accts's allocator), its top at an ID taken last.
// nib is scratch.
func addAccount(accts, slots *build.Builder, a *AccountLeaf, nib *[]byte) error {
	acc := a.Account.vertexAccount()
	*nib = hashkey.AppendNibbles((*nib)[:0], a.AddrHash[:])
	if err := accts.Add(*nib, vertex.AccountPayload, nil, &acc); err != nil {
		return err
	}
	if len(a.Storage) == 0 {
		return nil
	}
	slots.Reset(vertex.NoID, 0) // its top takes an ID after the rest of it
	for j := range a.Storage {
		s := &a.Storage[j]
		val := s.Value.Bytes32()
		*nib = hashkey.AppendNibbles((*nib)[:0], s.Hash[:])
		if err := slots.Add(*nib, vertex.SlotPayload, nodeenc.TrimLeadingZeros(val[:]), nil); err != nil {
			return err
		}
	}
	id, k, err := slots.Finish()
	if err != nil {
		return err
	}
	accts.SetStorage(id, k.Hash())
	return nil
}

// storageIDs returns how many IDs addAccount takes for a's storage: the
// storage trie's ID and those of its vertices, counted with c.
func storageIDs(c *build.Counter, f vertex.Format, a *AccountLeaf) int {
	if len(a.Storage) == 0 {
		return 0
	}
	c.Reset(f)
	for j := range a.Storage {
		c.Add(a.Storage[j].Hash[:])
	}
	return 1 + c.Finish()
}
