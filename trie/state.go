package trie

import (
	"bytes"
	"errors"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie/internal/nodeenc"
	"github.com/hexstate/hexstate/vertex"
	"github.com/holiman/uint256"
)

// This file is the state API an execution client uses: accounts in the account
// trie at vertex.RootID, keyed by keccak(address); each account's storage in its
// own trie, keyed by keccak(slot), rooted at an ID the account leaf records.

// Account is an Ethereum account as the state trie holds it. Its storage root is
// derived from its storage trie, never set directly. A zero CodeHash is taken to
// mean "no code" (hashkey.EmptyCodeHash).
type Account struct {
	Nonce    uint64
	Balance  uint256.Int
	CodeHash hashkey.Hash
}

// vertexAccount returns acc as an account leaf stores it (no storage yet).
func (acc *Account) vertexAccount() vertex.Account {
	a := vertex.Account{Nonce: acc.Nonce, Balance: acc.Balance, CodeHash: acc.CodeHash}
	if a.CodeHash == (hashkey.Hash{}) {
		a.CodeHash = hashkey.EmptyCodeHash
	}
	return a
}

// ErrNoAccount is returned by UpdateStorage for an account that does not exist.
var ErrNoAccount = errors.New("trie: no such account")

// errNotAccount is the corruption of a state trie leaf that is not an account.
var errNotAccount = errors.New("state trie holds a non-account value")

// UpdateAccount creates or updates the account at addrHash. An existing account
// keeps its storage.
func (fr *Frame) UpdateAccount(addrHash hashkey.Hash, acc Account) error {
	if err := fr.enter(useWrite, "update account"); err != nil {
		return err
	}
	defer fr.leave(useWrite)
	a := fr.newAccount()
	*a = acc.vertexAccount()
	var nb [64]byte
	p := payload{kind: vertex.AccountPayload, acc: a}
	return fr.merge(vertex.RootID, hashkey.AppendNibbles(nb[:0], addrHash[:]), &p, false)
}

// Account returns the account at addrHash and whether it exists.
func (fr *Frame) Account(addrHash hashkey.Hash) (Account, bool, error) {
	if err := fr.enter(useRead, "account"); err != nil {
		return Account{}, false, err
	}
	defer fr.leave(useRead)
	v, err := fr.read(addrHash, nil)
	if v == nil || err != nil {
		return Account{}, false, err
	}
	return Account{Nonce: v.Acc.Nonce, Balance: v.Acc.Balance, CodeHash: v.Acc.CodeHash}, true, nil
}

// DeleteAccount deletes the account at addrHash and its whole storage trie. An
// account created again afterwards, even in the same frame, starts with empty
// storage. Deleting an absent account is not an error.
func (fr *Frame) DeleteAccount(addrHash hashkey.Hash) error {
	if err := fr.enter(useWrite, "delete account"); err != nil {
		return err
	}
	defer fr.leave(useWrite)
	v, err := fr.findAccount(addrHash)
	if v == nil || err != nil {
		return err
	}
	var storage []vertex.ID
	if v.Acc.Storage != vertex.NoID {
		if storage, err = fr.subtrie(v.Acc.Storage); err != nil {
			return err
		}
	}
	var nb [64]byte
	if _, err = fr.remove(vertex.RootID, hashkey.AppendNibbles(nb[:0], addrHash[:]), false); err != nil {
		return err
	}
	fr.removed.addAccount(addrHash)
	for _, id := range storage {
		fr.vtx.Set(id, nil)
	}
	return nil
}

// UpdateStorage sets slot slotHash of the account at addrHash to value; zero (or
// nil) deletes the slot. The account must exist (ErrNoAccount otherwise).
func (fr *Frame) UpdateStorage(addrHash, slotHash hashkey.Hash, value *uint256.Int) error {
	if err := fr.enter(useWrite, "update storage"); err != nil {
		return err
	}
	defer fr.leave(useWrite)
	// Read everything first (the account's path, then the storage trie), write
	// after: an error leaves the frame unchanged.
	var steps [65]pathStep
	n, err := fr.accountPath(addrHash, &steps)
	if err != nil {
		return err
	}
	leaf := steps[n-1].v
	var nb [64]byte
	slotPath := hashkey.AppendNibbles(nb[:0], slotHash[:])
	sid := leaf.Acc.Storage
	if value == nil || value.IsZero() {
		if sid == vertex.NoID {
			return nil
		}
		if removed, err := fr.remove(sid, slotPath, true); err != nil || !removed {
			return err
		}
		fr.removed.addSlot(addrHash, slotHash)
		if v, _ := fr.vtx.Lookup(sid); v == nil {
			sid = vertex.NoID // the storage trie is empty now
		}
	} else {
		must := sid != vertex.NoID
		if !must {
			sid = fr.alloc.Take(1)
		}
		b := value.Bytes32()
		p := payload{kind: vertex.SlotPayload, value: fr.copyValue(nodeenc.TrimLeadingZeros(b[:]))}
		if err := fr.merge(sid, slotPath, &p, must); err != nil {
			return err
		}
	}
	// The account's storage root changed: void the keys on its path.
	for _, st := range steps[:n-1] {
		fr.own(st.id, st.v).stale |= 1 << st.n
	}
	// The account is copied into the frame's slab even when its storage ID
	// stays: a decoded leaf's account shares an allocation with the decoded
	// vertex, which the frame would otherwise keep alive.
	owned := fr.own(steps[n-1].id, leaf)
	a := fr.newAccount()
	*a = *owned.Acc
	a.Storage, a.StorageKey = sid, hashkey.Hash{} // the root changed: the hash records it
	owned.Acc = a
	return nil
}

// Storage returns the value of slot slotHash of the account at addrHash (zero when
// the slot or the account does not exist).
func (fr *Frame) Storage(addrHash, slotHash hashkey.Hash) (uint256.Int, error) {
	var x uint256.Int
	if err := fr.enter(useRead, "storage"); err != nil {
		return x, err
	}
	defer fr.leave(useRead)
	v, err := fr.read(addrHash, &slotHash)
	if v != nil {
		x.SetBytes(v.Value)
	}
	return x, err
}

// StateRoot returns the state root of this frame, recomputing only the paths its
// writes (and its unpersisted ancestors' writes) made dirty.
func (fr *Frame) StateRoot() (hashkey.Hash, error) { return fr.lockedHash() }

// StorageRoot returns the storage root of the account at addrHash (the empty root
// for an account without storage or an absent account).
func (fr *Frame) StorageRoot(addrHash hashkey.Hash) (hashkey.Hash, error) {
	if err := fr.enter(useHash, "storage root"); err != nil {
		return hashkey.Hash{}, err
	}
	defer fr.leave(useHash)
	a, err := fr.findAccount(addrHash)
	if a == nil || err != nil || a.Acc.Storage == vertex.NoID {
		return hashkey.EmptyRoot, err
	}
	if _, err := fr.need(a.Acc.Storage); err != nil {
		return hashkey.Hash{}, err
	}
	k, err := fr.rootKey(a.Acc.Storage)
	return k.Hash(), err
}

// AccountProof returns the EIP-1186 account proof of addrHash: the RLP nodes of
// the account trie from the root to the account (or to where its path ends).
func (fr *Frame) AccountProof(addrHash hashkey.Hash) ([][]byte, error) {
	if err := fr.enter(useHash, "account proof"); err != nil {
		return nil, err
	}
	defer fr.leave(useHash)
	return fr.proveAt(vertex.RootID, hashkey.AppendNibbles(nil, addrHash[:]))
}

// StorageProof returns the EIP-1186 storage proof of slotHash in the storage trie
// of the account at addrHash; empty when the account has no storage (its storage
// root is then the empty root, which VerifyProof accepts as proof of absence).
func (fr *Frame) StorageProof(addrHash, slotHash hashkey.Hash) ([][]byte, error) {
	if err := fr.enter(useHash, "storage proof"); err != nil {
		return nil, err
	}
	defer fr.leave(useHash)
	a, err := fr.findAccount(addrHash)
	if a == nil || err != nil || a.Acc.Storage == vertex.NoID {
		return nil, err
	}
	return fr.proveAt(a.Acc.Storage, hashkey.AppendNibbles(nil, slotHash[:]))
}

func (fr *Frame) findAccount(addrHash hashkey.Hash) (*node, error) {
	var nb [64]byte
	v, err := fr.find(vertex.RootID, hashkey.AppendNibbles(nb[:0], addrHash[:]), false)
	if v != nil && v.Payload != vertex.AccountPayload {
		return nil, vertexError(vertex.RootID, errNotAccount)
	}
	return v, err
}

// pathStep is one vertex on the way to an account: its ID, the version read, and
// the slot taken out of it (for the leaf, unused).
type pathStep struct {
	id vertex.ID
	v  *node
	n  byte
}

// accountPath reads the vertices from the root to the account at addrHash into
// steps and returns how many there are (the last is the account's leaf), or
// ErrNoAccount. It writes nothing.
func (fr *Frame) accountPath(addrHash hashkey.Hash, steps *[65]pathStep) (int, error) {
	var nb [64]byte
	path := hashkey.AppendNibbles(nb[:0], addrHash[:])
	id := vertex.RootID
	for i := range steps {
		v, err := fr.lookup(id, i > 0)
		if err != nil {
			return 0, err
		}
		if v == nil || !bytes.HasPrefix(path, v.Path) {
			return 0, ErrNoAccount
		}
		path = path[len(v.Path):]
		steps[i] = pathStep{id: id, v: v}
		if v.Kind == vertex.Leaf {
			if len(path) != 0 || v.Payload != vertex.AccountPayload {
				return 0, ErrNoAccount
			}
			return i + 1, nil
		}
		if len(path) == 0 || v.Child(int(path[0])) == vertex.NoID {
			return 0, ErrNoAccount
		}
		steps[i].n = path[0]
		id, path = v.Child(int(path[0])), path[1:]
	}
	return 0, ErrNoAccount
}
