package gethstate

import (
	"fmt"
	"math/big"
	"slices"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethdb"
	"github.com/ethereum/go-ethereum/params"
	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie"
	"github.com/holiman/uint256"
)

// How a block's changes reach a frame. Both update forms list every account the
// block changed with its new value (nil: deleted) and every storage slot it
// changed with its new value (zero: deleted):
//
//   - A deleted account is removed with its whole storage (DeleteAccount); slots
//     the update lists for it are then moot and skipped.
//   - Any other changed account is written with UpdateAccount, which keeps its
//     storage. An account self-destructed and created again in the same block
//     (possible before Cancun) therefore keeps its old slots at first, but
//     go-ethereum lists every slot the destruction wiped with a zero new value
//     (StateDB's deleteStorage), so writing the zeros leaves exactly the new
//     account's storage. Zero writes must never be skipped.
//
// Accounts are written before slots, since a slot needs its account to exist.

// KeyEncodingAt returns how the storage keys of a tracing.StateUpdate for the
// block with header h are encoded: raw slots (state.StorageKeyPlain) from
// Cancun on, slot hashes (state.StorageKeyHashed) before, by the rules
// go-ethereum commits the block with.
func KeyEncodingAt(config *params.ChainConfig, h *types.Header) state.StorageKeyEncoding {
	number := h.Number
	if number == nil {
		number = new(big.Int)
	}
	isMerge := h.Difficulty == nil || h.Difficulty.Sign() == 0
	if config.Rules(number, isMerge, h.Time).IsCancun {
		return state.StorageKeyPlain
	}
	return state.StorageKeyHashed
}

// ApplyStateUpdate writes the changes of u, as StateDB.CommitWithUpdate returns
// them, to fr. On error fr holds part of the changes: roll it back.
func ApplyStateUpdate(fr *trie.Frame, u *state.StateUpdate) error {
	if u == nil {
		return fmt.Errorf("gethstate: apply: nil state update")
	}
	// Sorted, so that a failing update fails the same way every time.
	for _, addrHash := range sortedKeys(u.Accounts) {
		if err := writeAccount(fr, addrHash, u.Accounts[addrHash]); err != nil {
			return fmt.Errorf("gethstate: apply block %d: %w", u.BlockNumber, err)
		}
	}
	for _, addrHash := range sortedKeys(u.Storages) {
		if acc, ok := u.Accounts[addrHash]; ok && acc == nil {
			continue // deleted with its storage
		}
		slots := u.Storages[addrHash]
		for _, slotHash := range sortedKeys(slots) {
			if err := writeSlot(fr, addrHash, slotHash, slots[slotHash]); err != nil {
				return fmt.Errorf("gethstate: apply block %d: %w", u.BlockNumber, err)
			}
		}
	}
	return nil
}

// ApplyTracingUpdate writes the changes of u, as the OnStateUpdate hook receives
// them, to fr; keys says how u's storage keys are encoded (KeyEncodingAt gives
// it for a block). On error fr holds part of the changes: roll it back.
func ApplyTracingUpdate(fr *trie.Frame, u *tracing.StateUpdate, keys state.StorageKeyEncoding) error {
	if u == nil {
		return fmt.Errorf("gethstate: apply: nil tracing update")
	}
	for _, addr := range sortedKeys(u.AccountChanges) {
		ch := u.AccountChanges[addr]
		if ch == nil {
			return fmt.Errorf("gethstate: apply block %d: account %x: nil change", u.BlockNumber, addr)
		}
		if err := writeAccount(fr, crypto.Keccak256Hash(addr[:]), ch.New); err != nil {
			return fmt.Errorf("gethstate: apply block %d: account %x: %w", u.BlockNumber, addr, err)
		}
	}
	for _, addr := range sortedKeys(u.StorageChanges) {
		if ch, ok := u.AccountChanges[addr]; ok && ch.New == nil {
			continue // deleted with its storage
		}
		addrHash := crypto.Keccak256Hash(addr[:])
		slots := u.StorageChanges[addr]
		for _, key := range sortedKeys(slots) {
			ch := slots[key]
			if ch == nil {
				return fmt.Errorf("gethstate: apply block %d: account %x slot %x: nil change", u.BlockNumber, addr, key)
			}
			if err := writeSlot(fr, addrHash, slotHash(key, keys), ch.New); err != nil {
				return fmt.Errorf("gethstate: apply block %d: account %x: %w", u.BlockNumber, addr, err)
			}
		}
	}
	return nil
}

// ApplyAlloc writes a genesis allocation to fr and its code to code (which may
// be nil when the code is stored elsewhere).
func ApplyAlloc(fr *trie.Frame, alloc types.GenesisAlloc, code ethdb.KeyValueWriter) error {
	for _, addr := range sortedKeys(alloc) {
		a := alloc[addr]
		acc := trie.Account{Nonce: a.Nonce, CodeHash: hashkey.EmptyCodeHash}
		if a.Balance != nil {
			if a.Balance.Sign() < 0 || acc.Balance.SetFromBig(a.Balance) {
				return fmt.Errorf("gethstate: genesis account %x: balance %v out of range", addr, a.Balance)
			}
		}
		if len(a.Code) > 0 {
			acc.CodeHash = hashkey.Hash(crypto.Keccak256Hash(a.Code))
			if code != nil {
				rawdb.WriteCode(code, common.Hash(acc.CodeHash), a.Code)
			}
		}
		addrHash := hashkey.Hash(crypto.Keccak256Hash(addr[:]))
		if err := fr.UpdateAccount(addrHash, acc); err != nil {
			return fmt.Errorf("gethstate: genesis account %x: %w", addr, err)
		}
		for _, slot := range sortedKeys(a.Storage) {
			val := a.Storage[slot]
			v := new(uint256.Int).SetBytes32(val[:])
			if err := fr.UpdateStorage(addrHash, hashkey.Hash(crypto.Keccak256Hash(slot[:])), v); err != nil {
				return fmt.Errorf("gethstate: genesis account %x slot %x: %w", addr, slot, err)
			}
		}
	}
	return nil
}

// WriteCodes stores the contract code u introduces in code (go-ethereum's layout,
// rawdb.WriteCode), where a Reader finds it. StateDB's own commit already does
// this for the code store of its state.Database; a client whose Reader reads
// another store calls it.
func WriteCodes(code ethdb.KeyValueWriter, u *state.StateUpdate) {
	for _, addr := range sortedKeys(u.Codes) {
		if c := u.Codes[addr]; c != nil && len(c.Blob) > 0 {
			rawdb.WriteCode(code, c.Hash, c.Blob)
		}
	}
}

// WriteTracingCodes is WriteCodes for a tracing update.
func WriteTracingCodes(code ethdb.KeyValueWriter, u *tracing.StateUpdate) {
	for _, addr := range sortedKeys(u.CodeChanges) {
		if c := u.CodeChanges[addr]; c != nil && c.New != nil && len(c.New.Code) > 0 {
			rawdb.WriteCode(code, c.New.Hash, c.New.Code)
		}
	}
}

// writeAccount deletes the account at addrHash (acc nil) or writes it.
func writeAccount(fr *trie.Frame, addrHash common.Hash, acc *types.StateAccount) error {
	if acc == nil {
		if err := fr.DeleteAccount(hashkey.Hash(addrHash)); err != nil {
			return fmt.Errorf("delete account %x: %w", addrHash, err)
		}
		return nil
	}
	a, err := fromStateAccount(acc)
	if err != nil {
		return fmt.Errorf("account %x: %w", addrHash, err)
	}
	if err := fr.UpdateAccount(hashkey.Hash(addrHash), a); err != nil {
		return fmt.Errorf("update account %x: %w", addrHash, err)
	}
	return nil
}

// writeSlot writes (zero: deletes) a storage slot.
func writeSlot(fr *trie.Frame, addrHash, slotHash, value common.Hash) error {
	v := new(uint256.Int).SetBytes32(value[:])
	if err := fr.UpdateStorage(hashkey.Hash(addrHash), hashkey.Hash(slotHash), v); err != nil {
		return fmt.Errorf("account %x slot %x: %w", addrHash, slotHash, err)
	}
	return nil
}

// slotHash returns the storage trie key of a slot key in the given encoding.
func slotHash(key common.Hash, keys state.StorageKeyEncoding) common.Hash {
	if keys == state.StorageKeyPlain {
		return crypto.Keccak256Hash(key[:])
	}
	return key
}

// sortedKeys returns m's keys in byte order.
func sortedKeys[K ~[20]byte | ~[32]byte, V any](m map[K]V) []K {
	ks := make([]K, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b K) int {
		for i := range len(a) {
			if a[i] != b[i] {
				return int(a[i]) - int(b[i])
			}
		}
		return 0
	})
	return ks
}
