// Package nodeenc turns vertices into the Ethereum node RLP they stand for and
// hashes it into hash keys: a leaf is [hex-prefix path, value], a branch the
// 17-item list of its children's keys and value, and a branch with a path (a
// fused extension) also the extension node [hex-prefix path, branch key] above
// it. An account leaf's value is RLP[nonce, balance, storageRoot, codeHash],
// with the storage root given by the caller, since vertices do not store it.
//
// It knows nothing of frames or stores: the trie's hasher finds the
// children's keys, the builders have them in hand, and both encode with it.
package nodeenc
