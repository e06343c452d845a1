package main

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	gethtrie "github.com/ethereum/go-ethereum/trie"
	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie"
	"github.com/holiman/uint256"
)

// Bulk-load mode: how close is building the whole state trie from sorted leaves
// to the cost of the keccaks it cannot avoid? The nodes (every hashed node of
// every storage trie and of the account trie, as RLP) are collected once with
// geth's StackTrie; the baseline is hashkey.Keccak256 over all those blobs.

// stackState builds the state with geth's StackTrie, calling onNode (may be nil)
// for every hashed node, and returns the state root.
func stackState(w *workload, onNode gethtrie.OnTrieNode) common.Hash {
	acc := gethtrie.NewStackTrie(onNode)
	for i := range w.accounts {
		a := &w.accounts[i]
		sa := types.StateAccount{Nonce: a.nonce, Balance: new(uint256.Int).Set(&a.balance), Root: types.EmptyRootHash, CodeHash: a.code[:]}
		if slots := w.storage[int32(i)]; len(slots) > 0 {
			st := gethtrie.NewStackTrie(onNode)
			for j := range slots {
				if err := st.Update(slots[j].Hash[:], gsSlotRLP(&slots[j].Value)); err != nil {
					panic(err)
				}
			}
			sa.Root = st.Hash()
		}
		if err := acc.Update(a.hash[:], gsAccountRLP(&sa)); err != nil {
			panic(err)
		}
	}
	return acc.Hash()
}

type bulkResult struct {
	name   string
	best   time.Duration
	all    []time.Duration
	allocs allocStats
}

func (b *bulkResult) add(d time.Duration) {
	b.all = append(b.all, d)
	if b.best == 0 || d < b.best {
		b.best = d
	}
}

func (b *bulkResult) median() time.Duration {
	s := slices.Clone(b.all)
	slices.Sort(s)
	return s[len(s)/2]
}

func runBulkload(f *benchFlags, w *workload, out io.Writer) error {
	var blobs [][]byte
	var total uint64
	want := stackState(w, func(_ []byte, _ common.Hash, blob []byte) {
		blobs = append(blobs, slices.Clone(blob))
		total += uint64(len(blob))
	})
	fmt.Fprintf(out, "state root %v: %d hashed nodes, %s of RLP (%.0f bytes/node)\n\n", want, len(blobs), fmtBytes(total), float64(total)/float64(len(blobs)))

	var results []*bulkResult
	kec := &bulkResult{name: "keccak of all nodes"}
	var sink byte
	for range f.reps {
		runtime.GC()
		start := time.Now()
		for _, b := range blobs {
			h := hashkey.Keccak256(b)
			sink ^= h[0]
		}
		kec.add(time.Since(start))
	}
	_ = sink
	results = append(results, kec)

	leaves := w.leaves()
	// Each hexstate layout runs twice: with the default workers (GOMAXPROCS:
	// the root's sub-tries are built in parallel) and with one, serial.
	type run struct {
		name    string
		workers int
	}
	var runs []run
	for _, name := range f.impls {
		runs = append(runs, run{name, 0})
		if name != "geth" {
			runs = append(runs, run{name, 1})
		}
	}
	for _, rn := range runs {
		name := rn.name
		r := &bulkResult{name: name}
		if rn.workers == 1 {
			r.name += " serial"
		}
		for range f.reps {
			var d time.Duration
			var root hashkey.Hash
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			if name == "geth" {
				r.name = "geth StackTrie"
				start := time.Now()
				root = hashkey.Hash(stackState(w, nil))
				d = time.Since(start)
			} else {
				db, err := trie.Open(trie.NewMemoryBackend(), &trie.Options{Format: formatOf(name), CacheBytes: f.cacheMB << 20, Workers: rn.workers})
				if err != nil {
					return err
				}
				tx := db.Begin()
				d, err = timed(r.name, "bulkload", func() (e error) {
					if e = tx.BulkLoadAccounts(leaves); e != nil {
						return e
					}
					root, e = tx.StateRoot()
					return e
				})
				if err != nil {
					return fmt.Errorf("%s: bulk load: %w", name, err)
				}
				tx.Rollback()
				db.Close()
			}
			runtime.ReadMemStats(&m1)
			r.allocs = memDelta(&m0, &m1)
			if root != hashkey.Hash(want) {
				return fmt.Errorf("STATE ROOT MISMATCH: %s bulk load gives %v, StackTrie %v", name, root, want)
			}
			r.add(d)
		}
		results = append(results, r)
	}
	fmt.Fprintf(out, "all roots equal %v\n\nbulk load of %d accounts (%d slots), in memory, best of %d (target: hexstate <= 1.50x keccak)\n", want, len(w.accounts), w.slots, f.reps)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "what\tbest ms\tmedian ms\tx keccak\tallocs\talloc bytes\ttarget\t")
	for _, r := range results {
		verdict := ""
		if r != kec && r.name != "geth StackTrie" {
			verdict = "MET"
			if float64(r.best) > 1.5*float64(kec.best) {
				verdict = "MISSED"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%d\t%s\t%s\t\n", r.name, ms(r.best), ms(r.median()), float64(r.best)/float64(kec.best),
			r.allocs.mallocs, fmtBytes(r.allocs.bytes), verdict)
	}
	return tw.Flush()
}
