package trie

import (
	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/vertex"
	"github.com/holiman/uint256"
)

// AccountIterator walks the accounts of a frame in ascending addrHash order.
type AccountIterator struct{ it *Iterator }

// Accounts returns an iterator over the accounts whose addrHash is >= start.
func (tx *Tx) Accounts(start hashkey.Hash) *AccountIterator {
	return &AccountIterator{tx.iterate(vertex.RootID, hashkey.AppendNibbles(nil, start[:]))}
}

// Next moves to the next account and reports whether there is one.
func (a *AccountIterator) Next() bool { return a.it.Next() }

// Hash returns the current account's addrHash.
func (a *AccountIterator) Hash() hashkey.Hash { return hashkey.Hash(a.it.Key()) }

// Account returns the current account.
func (a *AccountIterator) Account() Account {
	acc := a.it.value.Acc
	if acc == nil {
		return Account{}
	}
	return Account{Nonce: acc.Nonce, Balance: acc.Balance, CodeHash: acc.CodeHash}
}

// Err returns the error that stopped the iteration, if any.
func (a *AccountIterator) Err() error { return a.it.Err() }

// StorageIterator walks one account's storage slots in ascending slot-hash order.
type StorageIterator struct{ it *Iterator }

// StorageSlots returns an iterator over the slots >= start of the account at
// addrHash (none when the account or its storage does not exist).
func (tx *Tx) StorageSlots(addrHash, start hashkey.Hash) *StorageIterator {
	tx.db.mu.RLock()
	a, err := tx.findAccount(addrHash)
	if err == nil {
		err = tx.check(false)
	}
	tx.db.mu.RUnlock()
	if err != nil || a == nil || a.Acc.Storage == vertex.NoID {
		return &StorageIterator{&Iterator{tx: tx, err: err}}
	}
	return &StorageIterator{tx.iterate(a.Acc.Storage, hashkey.AppendNibbles(nil, start[:]))}
}

// Next moves to the next slot and reports whether there is one.
func (s *StorageIterator) Next() bool { return s.it.Next() }

// Hash returns the current slot's hash.
func (s *StorageIterator) Hash() hashkey.Hash { return hashkey.Hash(s.it.Key()) }

// Value returns the current slot's value.
func (s *StorageIterator) Value() uint256.Int {
	var x uint256.Int
	x.SetBytes(s.it.Value())
	return x
}

// Err returns the error that stopped the iteration, if any.
func (s *StorageIterator) Err() error { return s.it.Err() }
