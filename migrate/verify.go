package migrate

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie"
)

// verify checks the committed target against the source: root and block,
// record count, proofs of a sample of accounts and slots (each the first at
// or after a random hash, the same in both, its proof from the target valid
// against the root and proving the source's value); with VerifyFull every
// key of the target recomputed. It returns the number of proofs checked.
func verify(ctx context.Context, src, dst *trie.DB, want hashkey.Hash, records uint64, opts *Options) (int, error) {
	got, err := dst.StateRoot()
	if err != nil {
		return 0, err
	}
	if got != want {
		return 0, fmt.Errorf("%w: source %v, target %v", ErrRootMismatch, want, got)
	}
	if dst.Block() != src.Block() {
		return 0, fmt.Errorf("%w: target at block %d, source at %d", ErrVerify, dst.Block(), src.Block())
	}
	n, err := dst.RecordCount()
	if err != nil {
		return 0, err
	}
	if n != records {
		return 0, fmt.Errorf("%w: the target holds %d records, %d were copied", ErrVerify, n, records)
	}
	s, d := src.Begin(), dst.Begin()
	defer s.Rollback()
	defer d.Rollback()
	samples := opts.Samples
	if samples <= 0 {
		samples = 2000
	}
	rng := rand.New(rand.NewPCG(uint64(records), 1))
	proofs := 0
	for i := 0; i < samples && want != hashkey.EmptyRoot; i++ {
		if err := ctx.Err(); err != nil {
			return proofs, err
		}
		var h hashkey.Hash
		fill(rng, &h)
		k, err := sampleAccount(s, d, want, h, rng)
		if err != nil {
			return proofs, fmt.Errorf("%w: account at or after %v: %w", ErrVerify, h, err)
		}
		proofs += k
	}
	if opts.Verify == VerifyFull {
		if err := d.Check(); err != nil {
			return proofs, fmt.Errorf("%w: %w", ErrVerify, err)
		}
	}
	return proofs, nil
}

func fill(rng *rand.Rand, h *hashkey.Hash) {
	for i := 0; i < len(h); i += 8 {
		x := rng.Uint64()
		for j := 0; j < 8; j++ {
			h[i+j] = byte(x >> (8 * j))
		}
	}
}

// sampleAccount checks the first account at or after h (wrapping to the
// first one) and, when it has storage, the first slot at or after a random
// hash. It returns the number of proofs checked.
func sampleAccount(s, d *trie.Frame, root, h hashkey.Hash, rng *rand.Rand) (int, error) {
	addr, ok, err := firstAccount(s, d, h)
	if err == nil && !ok {
		addr, ok, err = firstAccount(s, d, hashkey.Hash{})
	}
	if err != nil || !ok {
		return 0, err
	}
	if err := sameProof(root, addr, func(f *trie.Frame) ([][]byte, error) { return f.AccountProof(addr) }, s, d); err != nil {
		return 0, err
	}
	sroot, err := d.StorageRoot(addr)
	if err != nil {
		return 1, err
	}
	if want, err := s.StorageRoot(addr); err != nil || want != sroot {
		return 1, fmt.Errorf("storage root of %v: %v, source %v (%v)", addr, sroot, want, err)
	}
	if sroot == hashkey.EmptyRoot {
		return 1, nil
	}
	var start hashkey.Hash
	fill(rng, &start)
	slot, ok, err := firstSlot(s, d, addr, start)
	if err == nil && !ok {
		slot, ok, err = firstSlot(s, d, addr, hashkey.Hash{})
	}
	if err != nil || !ok {
		return 1, fmt.Errorf("storage of %v: no slot in a non-empty trie (%v)", addr, err)
	}
	err = sameProof(sroot, slot, func(f *trie.Frame) ([][]byte, error) { return f.StorageProof(addr, slot) }, s, d)
	return 2, err
}

// firstAccount is the first account at or after h in both frames, which must
// agree on it.
func firstAccount(s, d *trie.Frame, h hashkey.Hash) (hashkey.Hash, bool, error) {
	si, di := s.Accounts(h), d.Accounts(h)
	sok, dok := si.Next(), di.Next()
	if err := firstErr(si.Err(), di.Err()); err != nil {
		return h, false, err
	}
	if sok != dok || (sok && (si.Hash() != di.Hash() || si.Account() != di.Account())) {
		return h, false, fmt.Errorf("the target's next account differs from the source's")
	}
	if !sok {
		return h, false, nil
	}
	return di.Hash(), true, nil
}

// firstSlot is the first slot of addr at or after h in both frames, which
// must agree on it.
func firstSlot(s, d *trie.Frame, addr, h hashkey.Hash) (hashkey.Hash, bool, error) {
	si, di := s.StorageSlots(addr, h), d.StorageSlots(addr, h)
	sok, dok := si.Next(), di.Next()
	if err := firstErr(si.Err(), di.Err()); err != nil {
		return h, false, err
	}
	if sok != dok || (sok && (si.Hash() != di.Hash() || si.Value() != di.Value())) {
		return h, false, fmt.Errorf("the target's next slot of %v differs from the source's", addr)
	}
	if !sok {
		return h, false, nil
	}
	return di.Hash(), true, nil
}

// sameProof checks that the target's proof of key verifies against root and
// proves the value the source's proof proves.
func sameProof(root, key hashkey.Hash, prove func(*trie.Frame) ([][]byte, error), s, d *trie.Frame) error {
	dp, err := prove(d)
	if err != nil {
		return err
	}
	got, err := trie.VerifyProof(root, key[:], dp)
	if err != nil {
		return fmt.Errorf("proof of %v: %w", key, err)
	}
	sp, err := prove(s)
	if err != nil {
		return err
	}
	want, err := trie.VerifyProof(root, key[:], sp)
	if err != nil {
		return fmt.Errorf("source's proof of %v: %w", key, err)
	}
	if got == nil || !bytes.Equal(got, want) {
		return fmt.Errorf("proof of %v proves %x, the source's %x", key, got, want)
	}
	return nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
