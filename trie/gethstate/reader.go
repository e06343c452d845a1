package gethstate

import (
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethdb"
	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie"
	"github.com/holiman/uint256"
)

// Reader serves go-ethereum's state.Reader from a hexstate frame: accounts and
// storage slots are read from the frame (keyed by keccak(address) and
// keccak(slot)), contract code from a go-ethereum key-value store, where
// go-ethereum keeps it (rawdb.ReadCode / rawdb.WriteCode).
//
// A Reader is safe for concurrent use as long as the frame is not written
// meanwhile: read from a block's parent frame, which is sealed once the block's
// own frame is begun on it.
type Reader struct {
	frame *trie.Frame
	code  ethdb.KeyValueReader
}

var _ state.Reader = (*Reader)(nil)

// NewReader returns a Reader of the state in fr, with contract code from code.
func NewReader(fr *trie.Frame, code ethdb.KeyValueReader) *Reader {
	return &Reader{frame: fr, code: code}
}

// Frame returns the frame r reads from.
func (r *Reader) Frame() *trie.Frame { return r.frame }

// Account returns the account at addr, nil when it does not exist. Its Root is
// the account's storage root, which the frame hashes when it is out of date.
func (r *Reader) Account(addr common.Address) (*types.StateAccount, error) {
	h := hashkey.Hash(crypto.Keccak256Hash(addr[:]))
	acc, ok, err := r.frame.Account(h)
	if err != nil {
		return nil, fmt.Errorf("gethstate: read account %x: %w", addr, err)
	}
	if !ok {
		return nil, nil
	}
	root, err := r.frame.StorageRoot(h)
	if err != nil {
		return nil, fmt.Errorf("gethstate: storage root of account %x: %w", addr, err)
	}
	return toStateAccount(&acc, root), nil
}

// Storage returns slot of the account at addr (zero when the slot or the
// account does not exist).
func (r *Reader) Storage(addr common.Address, slot common.Hash) (common.Hash, error) {
	v, err := r.frame.Storage(hashkey.Hash(crypto.Keccak256Hash(addr[:])), hashkey.Hash(crypto.Keccak256Hash(slot[:])))
	if err != nil {
		return common.Hash{}, fmt.Errorf("gethstate: read storage %x slot %x: %w", addr, slot, err)
	}
	return common.Hash(v.Bytes32()), nil
}

// Has reports whether the code with hash codeHash is in the code store (the
// empty code always is).
func (r *Reader) Has(_ common.Address, codeHash common.Hash) bool {
	if codeHash == types.EmptyCodeHash {
		return true
	}
	return rawdb.HasCode(r.code, codeHash)
}

// Code returns the code with hash codeHash, nil when it is not in the store or
// is the empty code.
func (r *Reader) Code(_ common.Address, codeHash common.Hash) []byte {
	if codeHash == types.EmptyCodeHash || codeHash == (common.Hash{}) {
		return nil
	}
	return rawdb.ReadCode(r.code, codeHash)
}

// CodeSize returns the length of the code with hash codeHash (zero when it is
// not in the store).
func (r *Reader) CodeSize(addr common.Address, codeHash common.Hash) int {
	return len(r.Code(addr, codeHash))
}

// toStateAccount converts a hexstate account with its storage root to
// go-ethereum's form.
func toStateAccount(acc *trie.Account, root hashkey.Hash) *types.StateAccount {
	codeHash := acc.CodeHash
	if codeHash == (hashkey.Hash{}) {
		codeHash = hashkey.EmptyCodeHash
	}
	bal := acc.Balance // copy
	return &types.StateAccount{
		Nonce:    acc.Nonce,
		Balance:  &bal,
		Root:     common.Hash(root),
		CodeHash: codeHash.Bytes(),
	}
}

// fromStateAccount converts go-ethereum's account to hexstate's (the storage
// root is not part of it: hexstate derives it from the storage trie).
func fromStateAccount(acc *types.StateAccount) (trie.Account, error) {
	var out trie.Account
	out.Nonce = acc.Nonce
	if acc.Balance != nil {
		out.Balance = *acc.Balance
	}
	switch len(acc.CodeHash) {
	case 0:
		out.CodeHash = hashkey.EmptyCodeHash
	case 32:
		copy(out.CodeHash[:], acc.CodeHash)
	default:
		return trie.Account{}, fmt.Errorf("gethstate: code hash of %d bytes, want 32", len(acc.CodeHash))
	}
	return out, nil
}

// balanceOf returns acc's balance, zero for nil.
func balanceOf(acc *types.StateAccount) *uint256.Int {
	if acc.Balance == nil {
		return new(uint256.Int)
	}
	return acc.Balance
}
