package trie_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/hexstate/hexstate/internal/trietest"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// This file checks that parallel hashing (Options.Workers > 1, used once a frame
// has parallelMin = 256 writes since its last hash) gives the serial roots, on
// single frames and on frames stacked on unpersisted parents, and that frames
// used from different goroutines are race-free (run with -race).

// TestParallelMatchesSerial: the same blocks applied to a Workers=1 and a
// Workers=4 database give the same root after every block, each frame
// persisted right away.
func TestParallelMatchesSerial(t *testing.T) {
	accounts, withStorage, blocks, perBlock := trietest.Sizes()
	trietest.EachFormat(t, func(t *testing.T, f vertex.Format) {
		ser := trietest.NewStore(t, trietest.Memory).OpenWith(trie.Options{Format: f, Workers: 1})
		par := trietest.NewStore(t, trietest.Memory).OpenWith(trie.Options{Format: f, Workers: 4})
		g := trietest.NewGen(uint64(f))
		m := trietest.Model{}
		for b := 0; b <= blocks; b++ {
			var ops []trietest.Op
			if b == 0 {
				ops = g.Genesis(accounts, withStorage)
			} else {
				ops = g.Block(perBlock)
			}
			ts, tp := ser.Begin(), par.Begin()
			trietest.ApplyOps(t, ts, nil, ops) // the model is kept once, below
			trietest.ApplyOps(t, tp, m, ops)
			trietest.SameRoot(t, ts, tp, fmt.Sprintf("block %d (%d ops)", b, len(ops)))
			if b == 0 || b == blocks {
				trietest.CheckRoot(t, tp, f, m, fmt.Sprintf("block %d", b))
			}
			if err := ser.Persist(ts, uint64(b)); err != nil {
				t.Fatal(err)
			}
			if err := par.Persist(tp, uint64(b)); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestParallelConcurrentFrames: sibling frames on one sealed, unhashed parent
// are written and hashed (in parallel, Workers=4) from their own goroutines
// while another goroutine reads, hashes and then persists the parent. Every
// child's root must equal its single-frame rebuild; -race must stay quiet.
func TestParallelConcurrentFrames(t *testing.T) {
	accounts, withStorage, _, perBlock := trietest.Sizes()
	trietest.EachFormat(t, func(t *testing.T, f vertex.Format) {
		db := trietest.NewStore(t, trietest.Memory).OpenWith(trie.Options{Format: f, Workers: 4})
		g := trietest.NewGen(uint64(f) + 100)
		base := trietest.Model{}
		fr := db.Begin()
		trietest.ApplyOps(t, fr, base, g.Genesis(accounts, withStorage))
		if err := db.Persist(fr, 1); err != nil {
			t.Fatal(err)
		}
		p := db.Begin()
		mp := base.Clone()
		trietest.ApplyOps(t, p, mp, g.Block(perBlock))

		const kids = 4
		children := make([]*trie.Frame, kids)
		models := make([]trietest.Model, kids)
		blocks := make([][]trietest.Op, kids)
		for k := range children {
			children[k] = p.Begin()
			models[k] = mp.Clone()
			kg := g.Fork(uint64(k), k*100000)
			blocks[k] = kg.Block(perBlock)
		}
		roots := make([]hashkey.Hash, kids)
		errs := make(chan error, kids+1)
		var wg sync.WaitGroup
		for k := range children {
			wg.Add(1)
			go func(k int) {
				defer wg.Done()
				fr, m := children[k], models[k]
				half := len(blocks[k]) / 2
				if err := trietest.ApplyOpsErr(fr, m, blocks[k][:half]); err != nil {
					errs <- err
					return
				}
				if _, err := fr.StateRoot(); err != nil {
					errs <- err
					return
				}
				if err := trietest.ApplyOpsErr(fr, m, blocks[k][half:]); err != nil {
					errs <- err
					return
				}
				r, err := fr.StateRoot()
				if err != nil {
					errs <- err
					return
				}
				for addr := range m {
					if _, err := fr.AccountProof(addr); err != nil {
						errs <- err
						return
					}
					break
				}
				roots[k] = r
			}(k)
		}
		wg.Add(1)
		go func() { // the parent's goroutine
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if _, _, err := p.Account(trietest.Addr(i)); err != nil {
					errs <- err
					return
				}
			}
			if _, err := p.StateRoot(); err != nil {
				errs <- err
				return
			}
			if err := db.Persist(p, 2); err != nil {
				errs <- err
			}
		}()
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for k, fr := range children {
			got := trietest.CheckRoot(t, fr, f, models[k], fmt.Sprintf("child %d", k))
			if got != roots[k] {
				t.Fatalf("child %d: root %v in its goroutine, %v afterwards", k, roots[k], got)
			}
			for j := 0; j < k; j++ {
				if roots[j] == roots[k] {
					t.Fatalf("children %d and %d have the same root", j, k)
				}
			}
		}
		if got, _ := db.StateRoot(); got != trietest.RebuildRoot(t, f, mp) {
			t.Fatalf("persisted parent: root %v", got)
		}
	})
}
