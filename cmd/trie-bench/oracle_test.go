package main

import (
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethdb/memorydb"
	gethtrie "github.com/ethereum/go-ethereum/trie"
	"github.com/ethereum/go-ethereum/triedb"
	"github.com/hexstate/hexstate/hashkey"
)

// newGethTrie returns an empty in-memory go-ethereum trie (hash scheme). It is
// never committed, so it stays usable after Hash.
func newGethTrie() *gethtrie.Trie {
	return gethtrie.NewEmpty(triedb.NewDatabase(rawdb.NewMemoryDatabase(), nil))
}

// proofRecorder is an ethdb.KeyValueWriter that keeps the nodes geth's Prove
// writes, in the order written (root first).
type proofRecorder struct{ nodes [][]byte }

func (p *proofRecorder) Put(_, v []byte) error {
	p.nodes = append(p.nodes, common.CopyBytes(v))
	return nil
}

func (p *proofRecorder) Delete([]byte) error { return nil }

// gethProve returns geth's proof for key as a root-first list of RLP nodes.
func gethProve(t *gethtrie.Trie, key []byte) ([][]byte, error) {
	var rec proofRecorder
	if err := t.Prove(key, &rec); err != nil {
		return nil, err
	}
	return rec.nodes, nil
}

// gethVerify checks a root-first proof list with geth's VerifyProof by loading
// it into a memorydb keyed by keccak(node).
func gethVerify(root hashkey.Hash, key []byte, proof [][]byte) ([]byte, error) {
	db := memorydb.New()
	for _, n := range proof {
		db.Put(crypto.Keccak256(n), n)
	}
	return gethtrie.VerifyProof(common.Hash(root), key, db)
}

// cloneProof deep-copies a proof so tampering never touches the original.
func cloneProof(p [][]byte) [][]byte {
	out := make([][]byte, len(p))
	for i, n := range p {
		out[i] = common.CopyBytes(n)
	}
	return out
}
