package main

import (
	"math/rand/v2"
	"slices"

	"github.com/hexstate/hexstate/vertex"
)

// failsAt applies ops to a fresh pair and checks exhaustively; with everyOp it
// checks after every op and returns the number of ops applied when a check
// first failed, otherwise it checks once at the end. It returns 0, nil when
// nothing fails.
func failsAt(f vertex.Format, ops []op, everyOp bool) (n int, err error) {
	r := rand.New(rand.NewPCG(1, 2))
	err = safely(func() error {
		p := newPair(f)
		for i, o := range ops {
			n = i + 1
			if err := p.apply(o); err != nil {
				return err
			}
			if everyOp {
				if err := p.check(r, true); err != nil {
					return err
				}
			}
		}
		return p.check(r, true)
	})
	if err == nil {
		n = 0
	}
	return n, err
}

// minimize shrinks a failing op list: first to the shortest failing prefix,
// then by deleting chunks and single ops while the final check still fails.
func minimize(f vertex.Format, ops []op) ([]op, error) {
	n, err := failsAt(f, ops, true)
	if err == nil {
		return ops, nil // not reproducible with exhaustive checks
	}
	ops = slices.Clone(ops[:n])
	for changed := true; changed; {
		changed = false
		for chunk := max(len(ops)/2, 1); chunk >= 1; chunk /= 2 {
			for i := 0; i+chunk <= len(ops); {
				cand := slices.Concat(ops[:i], ops[i+chunk:])
				if _, e := failsAt(f, cand, false); e != nil {
					ops, err, changed = cand, e, true
					continue
				}
				i += chunk
			}
		}
	}
	return ops, err
}
