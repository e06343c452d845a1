package gethstate

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie"
)

// ErrOriginMismatch is wrapped by VerifyStateUpdateOrigins and
// VerifyTracingOrigins when the parent frame disagrees with go-ethereum's
// previous value of an account or slot.
var ErrOriginMismatch = errors.New("gethstate: parent state differs from the update's previous value")

// maxMismatches bounds how many mismatches an origin check reports.
const maxMismatches = 8

// OriginCounts says how many previous values an origin check compared.
type OriginCounts struct {
	Accounts, Slots int
}

// VerifyStateUpdateOrigins checks that parent, the state a block was executed
// on, holds the previous values u records (AccountsOrigin, StoragesOrigin) for
// every account and slot the block changed, the storage root included. It is a
// consistency check a client can run while integrating.
func VerifyStateUpdateOrigins(parent *trie.Frame, u *state.StateUpdate) (OriginCounts, error) {
	var c originCheck
	for _, addr := range sortedKeys(u.AccountsOrigin) {
		c.account(parent, addr, u.AccountsOrigin[addr])
	}
	for _, addr := range sortedKeys(u.StoragesOrigin) {
		slots := u.StoragesOrigin[addr]
		for _, key := range sortedKeys(slots) {
			c.slot(parent, addr, slotHash(key, u.StorageKeyType), slots[key])
		}
	}
	return c.result(u.BlockNumber)
}

// VerifyTracingOrigins is VerifyStateUpdateOrigins for a tracing update (the
// Prev values of its changes); keys says how its storage keys are encoded.
func VerifyTracingOrigins(parent *trie.Frame, u *tracing.StateUpdate, keys state.StorageKeyEncoding) (OriginCounts, error) {
	var c originCheck
	for _, addr := range sortedKeys(u.AccountChanges) {
		if ch := u.AccountChanges[addr]; ch != nil {
			c.account(parent, addr, ch.Prev)
		}
	}
	for _, addr := range sortedKeys(u.StorageChanges) {
		slots := u.StorageChanges[addr]
		for _, key := range sortedKeys(slots) {
			if ch := slots[key]; ch != nil {
				c.slot(parent, addr, slotHash(key, keys), ch.Prev)
			}
		}
	}
	return c.result(u.BlockNumber)
}

// originCheck accumulates the comparisons of one update.
type originCheck struct {
	n    OriginCounts
	errs []error
	more int
}

func (c *originCheck) fail(err error) {
	if len(c.errs) < maxMismatches {
		c.errs = append(c.errs, err)
	} else {
		c.more++
	}
}

func (c *originCheck) account(fr *trie.Frame, addr common.Address, want *types.StateAccount) {
	c.n.Accounts++
	h := hashkey.Hash(crypto.Keccak256Hash(addr[:]))
	got, ok, err := fr.Account(h)
	if err != nil {
		c.fail(fmt.Errorf("account %x: %w", addr, err))
		return
	}
	switch {
	case !ok && want == nil:
		return
	case !ok:
		c.fail(fmt.Errorf("%w: account %x absent, previously nonce %d balance %v", ErrOriginMismatch, addr, want.Nonce, want.Balance))
		return
	case want == nil:
		c.fail(fmt.Errorf("%w: account %x exists (nonce %d balance %v), previously absent", ErrOriginMismatch, addr, got.Nonce, &got.Balance))
		return
	}
	root, err := fr.StorageRoot(h)
	if err != nil {
		c.fail(fmt.Errorf("account %x: storage root: %w", addr, err))
		return
	}
	have := toStateAccount(&got, root)
	wantCode := want.CodeHash
	if len(wantCode) == 0 {
		wantCode = types.EmptyCodeHash[:]
	}
	if have.Nonce != want.Nonce || !have.Balance.Eq(balanceOf(want)) || have.Root != want.Root || !bytes.Equal(have.CodeHash, wantCode) {
		c.fail(fmt.Errorf("%w: account %x is {nonce %d balance %v root %x code %x}, previously {nonce %d balance %v root %x code %x}",
			ErrOriginMismatch, addr, have.Nonce, have.Balance, have.Root, have.CodeHash, want.Nonce, balanceOf(want), want.Root, wantCode))
	}
}

func (c *originCheck) slot(fr *trie.Frame, addr common.Address, slotHash, want common.Hash) {
	c.n.Slots++
	got, err := fr.Storage(hashkey.Hash(crypto.Keccak256Hash(addr[:])), hashkey.Hash(slotHash))
	if err != nil {
		c.fail(fmt.Errorf("account %x slot %x: %w", addr, slotHash, err))
		return
	}
	if common.Hash(got.Bytes32()) != want {
		c.fail(fmt.Errorf("%w: account %x slot %x is %x, previously %x", ErrOriginMismatch, addr, slotHash, got.Bytes32(), want))
	}
}

func (c *originCheck) result(block uint64) (OriginCounts, error) {
	if len(c.errs) == 0 {
		return c.n, nil
	}
	if c.more > 0 {
		c.errs = append(c.errs, fmt.Errorf("and %d more", c.more))
	}
	return c.n, fmt.Errorf("gethstate: block %d: %w", block, errors.Join(c.errs...))
}
