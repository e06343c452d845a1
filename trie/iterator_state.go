package trie

import (
	"fmt"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/vertex"
	"github.com/holiman/uint256"
)

// AccountIterator walks the accounts of a frame in ascending addrHash order.
type AccountIterator struct{ it *Iterator }

// Accounts returns an iterator over the accounts whose addrHash is >= start.
func (fr *Frame) Accounts(start hashkey.Hash) *AccountIterator {
	return &AccountIterator{fr.iterate(vertex.RootID, hashkey.AppendNibbles(nil, start[:]))}
}

// Next moves to the next account and reports whether there is one. A trie that
// holds anything but accounts under 32-byte keys stops it with an error.
func (a *AccountIterator) Next() bool {
	if !a.it.Next() {
		return false
	}
	if v := a.it.value; v.Payload != vertex.AccountPayload || len(a.it.Key()) != 32 {
		a.it.err = &vertex.CorruptError{Reason: fmt.Sprintf("state trie holds a non-account value under key %x", a.it.Key())}
		return false
	}
	return true
}

// Hash returns the current account's addrHash; valid after Next returned true.
func (a *AccountIterator) Hash() hashkey.Hash {
	var h hashkey.Hash
	copy(h[:], a.it.Key())
	return h
}

// Account returns the current account; valid after Next returned true.
func (a *AccountIterator) Account() Account {
	if a.it.value == nil || a.it.value.Acc == nil {
		return Account{}
	}
	acc := a.it.value.Acc
	return Account{Nonce: acc.Nonce, Balance: acc.Balance, CodeHash: acc.CodeHash}
}

// Err returns the error that stopped the iteration, if any.
func (a *AccountIterator) Err() error { return a.it.Err() }

// StorageIterator walks one account's storage slots in ascending slot-hash order.
type StorageIterator struct{ it *Iterator }

// StorageSlots returns an iterator over the slots >= start of the account at
// addrHash (none when the account or its storage does not exist).
func (fr *Frame) StorageSlots(addrHash, start hashkey.Hash) *StorageIterator {
	err := fr.enter(useRead, "storage slots")
	var a *node
	if err == nil {
		a, err = fr.findAccount(addrHash)
		fr.leave(useRead)
	}
	if err != nil || a == nil || a.Acc.Storage == vertex.NoID {
		return &StorageIterator{&Iterator{fr: fr, err: err}}
	}
	return &StorageIterator{fr.iterate(a.Acc.Storage, hashkey.AppendNibbles(nil, start[:]))}
}

// Next moves to the next slot and reports whether there is one.
func (s *StorageIterator) Next() bool { return s.it.Next() }

// Hash returns the current slot's hash; valid after Next returned true.
func (s *StorageIterator) Hash() hashkey.Hash {
	var h hashkey.Hash
	copy(h[:], s.it.Key())
	return h
}

// Value returns the current slot's value; valid after Next returned true.
func (s *StorageIterator) Value() uint256.Int {
	var x uint256.Int
	x.SetBytes(s.it.Value())
	return x
}

// Err returns the error that stopped the iteration, if any.
func (s *StorageIterator) Err() error { return s.it.Err() }
