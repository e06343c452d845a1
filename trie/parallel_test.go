package trie_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/holiman/uint256"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// This file checks that parallel hashing (Options.Workers > 1, used once a frame
// has parallelMin = 256 writes since its last hash) gives the serial roots, on
// single frames and on frames stacked on unpersisted parents, and that frames
// used from different goroutines are race-free (run with -race).

// fxOp is one state change; the same ops are applied to every database.
type fxOp struct {
	kind  int // 0 update account, 1 delete account, 2 set slot (0 deletes)
	addr  hashkey.Hash
	acc   trie.Account
	slot  hashkey.Hash
	value uint64
}

func fxApply(t testing.TB, fr *trie.Frame, m fxModel, ops []fxOp) {
	t.Helper()
	if err := fxApplyErr(fr, m, ops); err != nil {
		t.Fatal(err)
	}
}

// fxApplyErr applies ops to fr and m (nil: no model); it is safe in any
// goroutine.
func fxApplyErr(fr *trie.Frame, m fxModel, ops []fxOp) error {
	for _, op := range ops {
		var err error
		switch op.kind {
		case 0:
			if err = fr.UpdateAccount(op.addr, op.acc); err == nil && m != nil {
				if a := m[op.addr]; a != nil {
					a.acc = op.acc
				} else {
					m[op.addr] = &fxAccount{acc: op.acc, slots: map[hashkey.Hash]uint256.Int{}}
				}
			}
		case 1:
			if err = fr.DeleteAccount(op.addr); err == nil && m != nil {
				delete(m, op.addr)
			}
		case 2:
			if err = fr.UpdateStorage(op.addr, op.slot, uint256.NewInt(op.value)); err == nil && m != nil {
				if op.value == 0 {
					delete(m[op.addr].slots, op.slot)
				} else {
					m[op.addr].slots[op.slot] = *uint256.NewInt(op.value)
				}
			}
		}
		if err != nil {
			return fmt.Errorf("op %+v: %w", op, err)
		}
	}
	return nil
}

// fxGen generates blocks of random changes, keeping its own view of which
// accounts exist (so storage is only written to existing accounts).
type fxGen struct {
	rng   *rand.Rand
	next  int         // next new account number
	live  []int       // existing accounts
	slots map[int]int // account -> slot numbers used so far
}

func newFxGen(seed uint64) *fxGen {
	return &fxGen{rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)), slots: map[int]int{}}
}

func (g *fxGen) newAccount(ops []fxOp) ([]fxOp, int) {
	i := g.next
	g.next++
	g.live = append(g.live, i)
	return append(ops, fxOp{kind: 0, addr: fxAddr(i), acc: fxAcc(g.rng.Uint64N(100), g.rng.Uint64())}), i
}

func (g *fxGen) setSlot(ops []fxOp, i int, zeroFrac float64) []fxOp {
	s := g.rng.IntN(g.slots[i] + 1)
	if s == g.slots[i] {
		g.slots[i]++
	}
	v := 1 + g.rng.Uint64N(1<<40)
	if g.rng.Float64() < zeroFrac {
		v = 0
	}
	return append(ops, fxOp{kind: 2, addr: fxAddr(i), slot: fxSlot(s), value: v})
}

// genesis: accounts accounts, withStorage of them with 1..30 slots.
func (g *fxGen) genesis(accounts, withStorage int) []fxOp {
	var ops []fxOp
	for k := 0; k < accounts; k++ {
		var i int
		ops, i = g.newAccount(ops)
		if k < withStorage {
			for n := 1 + g.rng.IntN(30); n > 0; n-- {
				ops = g.setSlot(ops, i, 0)
			}
		}
	}
	return ops
}

// block: n random changes (updates, creations, deletions, slot writes and
// slot deletions).
func (g *fxGen) block(n int) []fxOp {
	var ops []fxOp
	for len(ops) < n {
		r := g.rng.IntN(100)
		switch {
		case r < 10 || len(g.live) == 0:
			ops, _ = g.newAccount(ops)
		case r < 14:
			k := g.rng.IntN(len(g.live))
			i := g.live[k]
			g.live[k] = g.live[len(g.live)-1]
			g.live = g.live[:len(g.live)-1]
			delete(g.slots, i)
			ops = append(ops, fxOp{kind: 1, addr: fxAddr(i)})
		case r < 50:
			i := g.live[g.rng.IntN(len(g.live))]
			ops = append(ops, fxOp{kind: 0, addr: fxAddr(i), acc: fxAcc(g.rng.Uint64N(1000), g.rng.Uint64())})
		default:
			ops = g.setSlot(ops, g.live[g.rng.IntN(len(g.live))], 0.2)
		}
	}
	return ops
}

// fxSizes are smaller under -short.
func fxSizes() (accounts, withStorage, blocks, perBlock int) {
	if testing.Short() {
		return 1000, 100, 4, 400
	}
	return 3000, 300, 8, 600
}

// TestParallelMatchesSerial: the same blocks applied to a Workers=1 and a
// Workers=4 database give the same root after every block, each frame
// persisted right away.
func TestParallelMatchesSerial(t *testing.T) {
	accounts, withStorage, blocks, perBlock := fxSizes()
	fxEachMem(t, func(t *testing.T, f vertex.Format) {
		ser := (&fxStore{name: "serial", mem: trie.NewMemoryBackend()}).open(t, f, 1)
		par := (&fxStore{name: "parallel", mem: trie.NewMemoryBackend()}).open(t, f, 4)
		g := newFxGen(uint64(f))
		m := fxModel{}
		for b := 0; b <= blocks; b++ {
			var ops []fxOp
			if b == 0 {
				ops = g.genesis(accounts, withStorage)
			} else {
				ops = g.block(perBlock)
			}
			ts, tp := ser.Begin(), par.Begin()
			fxApply(t, ts, nil, ops) // the model is kept once, below
			fxApply(t, tp, m, ops)
			ptSameRoot(t, ts, tp, fmt.Sprintf("block %d (%d ops)", b, len(ops)))
			if b == 0 || b == blocks {
				fxCheckRoot(t, tp, f, m, fmt.Sprintf("block %d", b))
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

// TestParallelStackedFrames: frames stacked 3 deep on a persisted base (each
// block's frame begun on the previous one, the oldest persisted when three are
// pending), on RocksDB for the parallel side. With hashEvery 2, every other
// frame is begun on an unhashed parent, so the child's hashers compute the
// parent's keys (queued as pending clones in parallel mode).
func TestParallelStackedFrames(t *testing.T) {
	accounts, withStorage, blocks, perBlock := fxSizes()
	for _, f := range fxFormats {
		for _, hashEvery := range []int{1, 2} {
			t.Run(fmt.Sprintf("%v/hashEvery=%d", f, hashEvery), func(t *testing.T) {
				ser := (&fxStore{name: "serial", mem: trie.NewMemoryBackend()}).open(t, f, 1)
				par := (&fxStore{name: "rocksdb", dir: t.TempDir()}).open(t, f, 4)
				g := newFxGen(uint64(f)*10 + uint64(hashEvery))
				m := fxModel{}
				var ps, pp []*trie.Frame // pending frames, oldest first
				for b := 0; b <= blocks+2; b++ {
					var ops []fxOp
					if b == 0 {
						ops = g.genesis(accounts, withStorage)
					} else {
						ops = g.block(perBlock)
					}
					var ts, tp *trie.Frame
					if len(ps) == 0 {
						ts, tp = ser.Begin(), par.Begin()
					} else {
						ts, tp = ps[len(ps)-1].Begin(), pp[len(pp)-1].Begin()
					}
					fxApply(t, ts, nil, ops)
					fxApply(t, tp, m, ops)
					ps, pp = append(ps, ts), append(pp, tp)
					if b%hashEvery == 0 || b >= blocks {
						ptSameRoot(t, ts, tp, fmt.Sprintf("block %d", b))
						if b == blocks/2 || b == blocks+2 {
							fxCheckRoot(t, tp, f, m, fmt.Sprintf("block %d", b))
						}
					}
					if len(ps) == 3 {
						if err := ser.Persist(ps[0], uint64(b-2)); err != nil {
							t.Fatal(err)
						}
						if err := par.Persist(pp[0], uint64(b-2)); err != nil {
							t.Fatal(err)
						}
						rs, _ := ser.StateRoot()
						rp, _ := par.StateRoot()
						if rs != rp {
							t.Fatalf("persisted block %d: serial root %v, parallel root %v", b-2, rs, rp)
						}
						ps, pp = ps[1:], pp[1:]
					}
				}
				// The frames still pending read the right state on top of the base.
				fxCheckState(t, pp[len(pp)-1], m)
			})
		}
	}
}

// TestParallelConcurrentFrames: sibling frames on one sealed, unhashed parent
// are written and hashed (in parallel, Workers=4) from their own goroutines
// while another goroutine reads, hashes and then persists the parent. Every
// child's root must equal its single-frame rebuild; -race must stay quiet.
func TestParallelConcurrentFrames(t *testing.T) {
	accounts, withStorage, _, perBlock := fxSizes()
	fxEachMem(t, func(t *testing.T, f vertex.Format) {
		db := (&fxStore{name: "memory", mem: trie.NewMemoryBackend()}).open(t, f, 4)
		g := newFxGen(uint64(f) + 100)
		base := fxModel{}
		fr := db.Begin()
		fxApply(t, fr, base, g.genesis(accounts, withStorage))
		if err := db.Persist(fr, 1); err != nil {
			t.Fatal(err)
		}
		p := db.Begin()
		mp := base.clone()
		fxApply(t, p, mp, g.block(perBlock))

		const kids = 4
		children := make([]*trie.Frame, kids)
		models := make([]fxModel, kids)
		blocks := make([][]fxOp, kids)
		for k := range children {
			children[k] = p.Begin()
			models[k] = mp.clone()
			kg := newFxGen(uint64(k))
			kg.next, kg.live, kg.slots = g.next+k*100000, append([]int(nil), g.live...), map[int]int{}
			blocks[k] = kg.block(perBlock)
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
				if err := fxApplyErr(fr, m, blocks[k][:half]); err != nil {
					errs <- err
					return
				}
				if _, err := fr.StateRoot(); err != nil {
					errs <- err
					return
				}
				if err := fxApplyErr(fr, m, blocks[k][half:]); err != nil {
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
				if _, _, err := p.Account(fxAddr(i)); err != nil {
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
			got := fxCheckRoot(t, fr, f, models[k], fmt.Sprintf("child %d", k))
			if got != roots[k] {
				t.Fatalf("child %d: root %v in its goroutine, %v afterwards", k, roots[k], got)
			}
			for j := 0; j < k; j++ {
				if roots[j] == roots[k] {
					t.Fatalf("children %d and %d have the same root", j, k)
				}
			}
		}
		if got, _ := db.StateRoot(); got != fxRebuildRoot(t, f, mp) {
			t.Fatalf("persisted parent: root %v", got)
		}
	})
}

// ptSameRoot fails unless the serially and the parallel hashed frames have the
// same state root.
func ptSameRoot(t *testing.T, ts, tp *trie.Frame, what string) {
	t.Helper()
	rs, err := ts.StateRoot()
	if err != nil {
		t.Fatal(err)
	}
	rp, err := tp.StateRoot()
	if err != nil {
		t.Fatal(err)
	}
	if rs != rp {
		t.Fatalf("%s: serial root %v, parallel root %v", what, rs, rp)
	}
}
