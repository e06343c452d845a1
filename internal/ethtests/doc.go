// Package ethtests locates and reads the ethereum/tests conformance vectors
// (https://github.com/ethereum/tests) that hexstate's tests check against. The
// vectors are never copied into this repository: tests read them from disk, from
// $HEXSTATE_ETHTESTS or from ../shared/testdata/ethereum-tests beside the checkout,
// and skip when neither is present.
//
// It reads the TrieTests and RLPTests JSON files (LoadJSON, with the vectors'
// hex and quantity conventions: Bytes, Hex, Quantity) and the state roots of
// stateroots/stateroots.jsonl.gz, derived from BlockchainTests (ReadStates,
// EachState). Only tests import it.
package ethtests
