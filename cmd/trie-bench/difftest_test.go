package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"testing"
	"time"

	gethtrie "github.com/ethereum/go-ethereum/trie"
	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

var (
	flagSeed   = flag.Uint64("difftest.seed", 0, "base seed of the differential tests (0: time-based)")
	flagN      = flag.Int("difftest.n", 0, "sequences per format (0: default, smaller with -short)")
	flagBudget = flag.Duration("difftest.budget", 0, "stop starting new sequences after this long per format (0: default)")
)

var formats = []vertex.Format{vertex.FormatV1, vertex.FormatV2}

// baseSeed returns the seed the run starts from, printed so it can be replayed.
func baseSeed(t *testing.T) uint64 {
	if *flagSeed != 0 {
		return *flagSeed
	}
	return uint64(time.Now().UnixNano())
}

var errPanic = errors.New("panic")

// safely runs f, turning a panic into an error carrying the stack.
func safely(f func() error) (err error) {
	defer func() {
		if x := recover(); x != nil {
			err = fmt.Errorf("%w: %v\n%s", errPanic, x, debug.Stack())
		}
	}()
	return f()
}

// TestDifferential replays random insert/overwrite/delete sequences on hexstate
// (both formats) and on go-ethereum's trie, comparing roots, values and proofs
// after every batch. A failing sequence is shrunk to a minimal op list.
func TestDifferential(t *testing.T) {
	base := baseSeed(t)
	n, budget := 3000, 20*time.Second
	if testing.Short() {
		n, budget = 200, 5*time.Second
	}
	if *flagN > 0 {
		n = *flagN
	}
	if *flagBudget > 0 {
		budget = *flagBudget
	}
	t.Logf("base seed %d (replay with -difftest.seed=%d)", base, base)
	for _, f := range formats {
		t.Run(f.String(), func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			ran := 0
			for i := range n {
				if i > 0 && time.Since(start) > budget {
					break
				}
				seed := base + uint64(i)
				batches := genSequence(seed)
				if err := runSequence(f, batches, seed); err != nil {
					t.Errorf("format %v, seed %d: %v", f, seed, err)
					t.Errorf("replay: go test -run 'TestDifferential/%v' -difftest.seed=%d -difftest.n=1", f, seed)
					ops, merr := minimize(f, slices.Concat(batches...))
					t.Errorf("minimal reproduction (%d ops), then check fails with: %v\n%s", len(ops), merr, formatOps(ops))
					return
				}
				ran++
			}
			t.Logf("%v: %d sequences in %v", f, ran, time.Since(start).Round(time.Millisecond))
		})
	}
}

// runSequence applies the batches to a fresh pair, checking after each batch.
func runSequence(f vertex.Format, batches [][]op, seed uint64) error {
	r := rand.New(rand.NewPCG(seed, 42))
	return safely(func() error {
		p := newPair(f)
		for bi, batch := range batches {
			for oi, o := range batch {
				if err := p.apply(o); err != nil {
					return fmt.Errorf("batch %d op %d (%v): %w", bi, oi, o, err)
				}
			}
			if err := p.check(r, false); err != nil {
				return fmt.Errorf("after batch %d (%d ops): %w", bi, len(batch), err)
			}
		}
		return nil
	})
}

// hv formats a value for messages, "<absent>" for nil.
func hv(v []byte) string {
	if v == nil {
		return "<absent>"
	}
	return fmt.Sprintf("%x", v)
}

// pair is a hexstate trie and a geth trie fed the same operations, plus a plain
// map model of the contents.
type pair struct {
	hs     *trie.Trie
	geth   *gethtrie.Trie
	model  map[string][]byte
	probes [][]byte // every key ever touched, present or not
	seen   map[string]bool
}

func newPair(f vertex.Format) *pair {
	return &pair{
		hs:    trie.NewTrieFormat(f),
		geth:  newGethTrie(),
		model: map[string][]byte{},
		seen:  map[string]bool{},
	}
}

func (p *pair) apply(o op) error {
	if !p.seen[string(o.key)] {
		p.seen[string(o.key)] = true
		p.probes = append(p.probes, o.key)
	}
	switch {
	case o.kind == opDelete:
		delete(p.model, string(o.key))
		if err := p.geth.Delete(o.key); err != nil {
			return fmt.Errorf("geth Delete: %v", err)
		}
		if err := p.hs.Delete(o.key); err != nil {
			return fmt.Errorf("hexstate Delete(%x): %v", o.key, err)
		}
	default:
		if len(o.val) == 0 {
			delete(p.model, string(o.key))
		} else {
			p.model[string(o.key)] = o.val
		}
		if err := p.geth.Update(o.key, o.val); err != nil {
			return fmt.Errorf("geth Update: %v", err)
		}
		if err := p.hs.Put(o.key, o.val); err != nil {
			return fmt.Errorf("hexstate Put(%x, %x): %v", o.key, o.val, err)
		}
	}
	return nil
}

// probeKeys returns the keys check looks at: every key ever touched plus near
// misses of them, or a random sample of those unless exhaustive.
func (p *pair) probeKeys(r *rand.Rand, exhaustive bool) (gets, proofs [][]byte) {
	all := slices.Clone(p.probes)
	for _, k := range p.probes {
		all = append(all, append(slices.Clone(k), 0x00), append(slices.Clone(k), 0xf0))
		if len(k) > 1 {
			all = append(all, k[:len(k)-1])
		}
		m := slices.Clone(k)
		m[len(m)-1] ^= 0x01
		all = append(all, m)
	}
	if exhaustive {
		return all, all
	}
	sample := func(n int) [][]byte {
		var out [][]byte
		for range min(n, len(all)) {
			out = append(out, all[r.IntN(len(all))])
		}
		// make sure live keys are well represented
		for k := range p.model {
			if len(out) >= 2*n {
				break
			}
			out = append(out, []byte(k))
		}
		return out
	}
	return sample(24), sample(5)
}

// check compares roots, values and proofs of the two tries and the model.
func (p *pair) check(r *rand.Rand, exhaustive bool) error {
	root := p.hs.Hash()
	if groot := p.geth.Hash(); root != hashkey.Hash(groot) {
		return fmt.Errorf("root mismatch: hexstate %v, geth %v (%d keys)", root, groot, len(p.model))
	}
	gets, proofs := p.probeKeys(r, exhaustive)
	for _, k := range gets {
		want := p.model[string(k)]
		got, err := p.hs.Get(k)
		if err != nil {
			return fmt.Errorf("hexstate Get(%x): %v", k, err)
		}
		if !bytes.Equal(got, want) {
			return fmt.Errorf("hexstate Get(%x) = %s, want %s", k, hv(got), hv(want))
		}
		if gv, err := p.geth.Get(k); err != nil || !bytes.Equal(gv, want) {
			return fmt.Errorf("harness bug: geth Get(%x) = %s, %v, want %s", k, hv(gv), err, hv(want))
		}
	}
	for _, k := range proofs {
		if err := p.checkProof(r, root, k, exhaustive); err != nil {
			return err
		}
	}
	return nil
}

// checkProof cross-verifies the proofs of key from both tries and checks that
// tampered proofs are rejected.
func (p *pair) checkProof(r *rand.Rand, root hashkey.Hash, key []byte, exhaustive bool) error {
	want := p.model[string(key)]
	ours, err := p.hs.Prove(key)
	if root == hashkey.EmptyRoot {
		// geth's proof of an empty trie is empty and its verifier rejects it;
		// only require that ours never proves a value.
		if err == nil {
			if v, err := trie.VerifyProof(root, key, ours); err == nil && v != nil {
				return fmt.Errorf("empty trie: VerifyProof(%x) = %s from proof %x", key, hv(v), ours)
			}
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("hexstate Prove(%x): %v", key, err)
	}
	theirs, err := gethProve(p.geth, key)
	if err != nil {
		return fmt.Errorf("harness bug: geth Prove(%x): %v", key, err)
	}
	if v, err := gethVerify(root, key, ours); err != nil || !bytes.Equal(v, want) {
		return fmt.Errorf("geth VerifyProof of hexstate's proof of %x = %s, %v; want %s\nhexstate proof: %x\ngeth proof:     %x", key, hv(v), err, hv(want), ours, theirs)
	}
	if v, err := trie.VerifyProof(root, key, theirs); err != nil || !bytes.Equal(v, want) {
		return fmt.Errorf("hexstate VerifyProof of geth's proof of %x = %s, %v; want %s\ngeth proof: %x", key, hv(v), err, hv(want), theirs)
	}
	if v, err := trie.VerifyProof(root, key, ours); err != nil || !bytes.Equal(v, want) {
		return fmt.Errorf("hexstate VerifyProof of its own proof of %x = %s, %v; want %s\nproof: %x", key, hv(v), err, hv(want), ours)
	}
	if !slices.EqualFunc(ours, theirs, bytes.Equal) {
		return fmt.Errorf("Prove(%x) differs from geth's:\nhexstate: %x\ngeth:     %x", key, ours, theirs)
	}
	bogus := hashkey.Keccak256(root[:])
	if v, err := trie.VerifyProof(bogus, key, theirs); err == nil {
		return fmt.Errorf("hexstate VerifyProof accepted a proof of %x against a wrong root (value %s)", key, hv(v))
	}
	n := 2
	if exhaustive {
		n = 8
	}
	for range n {
		tp, how := tamper(r, theirs)
		if err := checkTampered(root, key, want, tp, how); err != nil {
			return err
		}
	}
	return nil
}

// tamper returns a damaged copy of a non-empty proof and a description.
func tamper(r *rand.Rand, proof [][]byte) ([][]byte, string) {
	tp := cloneProof(proof)
	i := r.IntN(len(tp))
	switch r.IntN(4) {
	case 0:
		j := r.IntN(len(tp[i]))
		x := byte(1 + r.IntN(255))
		tp[i][j] ^= x
		return tp, fmt.Sprintf("flip byte %d of node %d by %#02x", j, i, x)
	case 1:
		return slices.Delete(tp, i, i+1), fmt.Sprintf("drop node %d", i)
	case 2:
		return tp[:i], fmt.Sprintf("truncate proof to %d nodes", i)
	default:
		j := r.IntN(len(tp[i]))
		tp[i] = tp[i][:j]
		return tp, fmt.Sprintf("truncate node %d to %d bytes", i, j)
	}
}

// checkTampered: hexstate must reject a damaged proof, or, should the damage
// leave a proof geth still accepts, return the right value.
func checkTampered(root hashkey.Hash, key, want []byte, tp [][]byte, how string) error {
	var v []byte
	err := safely(func() (err error) {
		v, err = trie.VerifyProof(root, key, tp)
		return err
	})
	if err != nil {
		if errors.Is(err, errPanic) {
			return err
		}
		return nil // rejected
	}
	if !bytes.Equal(v, want) {
		return fmt.Errorf("tampered proof (%s) of %x accepted with WRONG value %s, want %s\nproof: %x", how, key, hv(v), hv(want), tp)
	}
	if _, gerr := gethVerify(root, key, tp); gerr != nil {
		return fmt.Errorf("tampered proof (%s) of %x accepted (value %s) although geth rejects it: %v\nproof: %x", how, key, hv(v), gerr, tp)
	}
	return nil
}
