package main

import (
	"github.com/hexstate/hexstate/hashkey"
	"github.com/holiman/uint256"
)

// scaleAccount is one account of the scale state as the builds take it, in
// trie order: its hash, index, fields and slots sorted by slot hash.
type scaleAccount struct {
	hash  hashkey.Hash
	i     int
	nonce uint64
	bal   uint256.Int
	code  hashkey.Hash
	slots []scaleSlot
}

// scaleChunk is a run of accounts of about scaleChunkLeaves leaves (accounts
// plus slots), or the error that ended the stream.
type scaleChunk struct {
	accounts []scaleAccount
	err      error
}

const scaleChunkLeaves = 100_000

// streamState generates the state of shape s in trie order (idx) on a
// goroutine of its own, a chunk ahead of the build that takes it: a client's
// sync likewise receives its input while it builds, and the build's time is
// then the build's, not the generator's (which hashes every slot key and
// sorts every contract's slots). Closing stop ends the stream early; the
// channel is closed after the last chunk.
func streamState(idx *indexReader, s scaleShape, stop <-chan struct{}) <-chan scaleChunk {
	out := make(chan scaleChunk, 1)
	go func() {
		defer close(out)
		send := func(c scaleChunk) bool {
			select {
			case out <- c:
				return true
			case <-stop:
				return false
			}
		}
		var chunk []scaleAccount
		leaves := 0
		for {
			h, i, ok, err := idx.Next()
			if err != nil {
				send(scaleChunk{err: err})
				return
			}
			if !ok {
				break
			}
			a := scaleAccount{hash: h, i: i, slots: sortedSlots(s, i)}
			a.nonce, a.bal, a.code = s.account(i)
			chunk = append(chunk, a)
			if leaves += 1 + len(a.slots); leaves >= scaleChunkLeaves {
				if !send(scaleChunk{accounts: chunk}) {
					return
				}
				chunk, leaves = nil, 0
			}
		}
		if len(chunk) > 0 {
			send(scaleChunk{accounts: chunk})
		}
	}()
	return out
}
