package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

type opKind uint8

const (
	opPut    opKind = iota // Put(key, val); an empty val deletes
	opDelete               // Delete(key)
)

// op is one trie mutation of a differential sequence.
type op struct {
	kind opKind
	key  []byte
	val  []byte
}

// String prints the op as a Go statement against a hexstate *trie.Trie named tr.
func (o op) String() string {
	if o.kind == opDelete {
		return fmt.Sprintf("tr.Delete(hx(%q))", fmt.Sprintf("%x", o.key))
	}
	return fmt.Sprintf("tr.Put(hx(%q), hx(%q))", fmt.Sprintf("%x", o.key), fmt.Sprintf("%x", o.val))
}

func formatOps(ops []op) string {
	var sb strings.Builder
	for _, o := range ops {
		sb.WriteString("\t")
		sb.WriteString(o.String())
		sb.WriteString("\n")
	}
	return sb.String()
}

// genSequence deterministically derives a sequence of op batches from seed.
// Most sequences are small tries over a tiny alphabet; a few are larger tries
// of random 32-byte keys so that full branches and deep paths occur too.
func genSequence(seed uint64) [][]op {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	g := newKeyGen(r)
	live := map[string]bool{}
	var liveKeys []string // may hold stale entries; filtered by live
	pickLive := func() []byte {
		for range 8 {
			if len(liveKeys) == 0 {
				return nil
			}
			i := r.IntN(len(liveKeys))
			if live[liveKeys[i]] {
				return []byte(liveKeys[i])
			}
			liveKeys[i] = liveKeys[len(liveKeys)-1]
			liveKeys = liveKeys[:len(liveKeys)-1]
		}
		return nil
	}
	put := func(k, v []byte) op {
		if len(v) == 0 {
			delete(live, string(k))
		} else if !live[string(k)] {
			live[string(k)] = true
			liveKeys = append(liveKeys, string(k))
		}
		return op{kind: opPut, key: k, val: v}
	}

	big := r.IntN(40) == 0
	nbatches := 1 + r.IntN(5)
	batches := make([][]op, 0, nbatches)
	for range nbatches {
		var batch []op
		if big {
			for range 200 + r.IntN(400) {
				if k := pickLive(); k != nil && r.IntN(5) == 0 {
					if r.IntN(2) == 0 {
						batch = append(batch, put(k, randValue(r)))
					} else {
						delete(live, string(k))
						batch = append(batch, op{kind: opDelete, key: k})
					}
					continue
				}
				batch = append(batch, put(randBytes(r, 32), randValue(r)))
			}
			batches = append(batches, batch)
			continue
		}
		if len(live) > 0 && r.IntN(12) == 0 { // wipe the trie down to empty
			for k := range live {
				batch = append(batch, op{kind: opDelete, key: []byte(k)})
			}
			clear(live)
			batches = append(batches, batch)
			continue
		}
		for range 1 + r.IntN(40) {
			switch x := r.IntN(20); {
			case x < 9: // insert a fresh (or colliding) key
				batch = append(batch, put(g.key(), randValue(r)))
			case x < 12: // overwrite a live key
				if k := pickLive(); k != nil {
					batch = append(batch, put(k, randValue(r)))
				}
			case x < 16: // delete a live key
				if k := pickLive(); k != nil {
					delete(live, string(k))
					batch = append(batch, op{kind: opDelete, key: k})
				}
			case x < 17: // delete a live key through Put with an empty value
				if k := pickLive(); k != nil {
					batch = append(batch, put(k, nil))
				}
			case x < 18: // delete a key that is probably absent
				k := g.key()
				delete(live, string(k))
				batch = append(batch, op{kind: opDelete, key: k})
			default: // delete a live key and re-insert it in the same batch
				if k := pickLive(); k != nil {
					batch = append(batch, put(k, nil))
					batch = append(batch, put(k, randValue(r)))
				}
			}
		}
		batches = append(batches, batch)
	}
	return batches
}
