package main

import (
	"fmt"
	"io"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/hexstate/hexstate/hashkey"
)

// scaleKeccak times what no build of the scale state can avoid: one core's
// Keccak-256 of the RLP of every hashed node of the state (every storage
// trie's and the account trie's, leaves included, as go-ethereum's
// StackTrie emits them from the same sorted leaves). The nodes are
// collected in 64 MiB batches and each batch is hashed in one timed loop, so
// that only the hashing is timed. It reads the state from the index at
// path, as the builds do.
func scaleKeccak(path string, s scaleShape) (d time.Duration, nodes, size uint64, err error) {
	idx, err := openIndex(path)
	if err != nil {
		return 0, 0, 0, err
	}
	defer idx.Close()
	var arena []byte
	var ends []int
	var sink byte
	hashAll := func() {
		start, prev := time.Now(), 0
		for _, e := range ends {
			h := hashkey.Keccak256(arena[prev:e])
			sink ^= h[0]
			prev = e
		}
		d += time.Since(start)
		arena, ends = arena[:0], ends[:0]
	}
	st := scaleStackTries{node: func(_ common.Hash, _, blob []byte) {
		arena = append(arena, blob...)
		ends = append(ends, len(arena))
		nodes, size = nodes+1, size+uint64(len(blob))
		if len(arena) >= 64<<20 {
			hashAll()
		}
	}}
	if _, err := st.run(idx, s); err != nil {
		return 0, 0, 0, err
	}
	hashAll()
	_ = sink
	return d, nodes, size, nil
}

// reportKeccak prints scaleKeccak's time beside the build's.
func reportKeccak(out io.Writer, name, path string, s scaleShape, build time.Duration) error {
	d, nodes, size, err := scaleKeccak(path, s)
	if err != nil {
		return fmt.Errorf("%s: keccak of all nodes: %w", name, err)
	}
	fmt.Fprintf(out, "[%s] keccak of all %d nodes (%s of RLP) on one core: %v; the build took %.2fx that (issue 9: <= 2x)\n",
		name, nodes, fmtBytes(size), d.Round(time.Millisecond), build.Seconds()/d.Seconds())
	return nil
}
