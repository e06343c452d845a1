// Package build builds tries from sorted input in one pass, the way snap sync
// delivers state and go-ethereum's StackTrie hashes it: Builder keeps only the
// open path, hashes every vertex as soon as its children are known and hands
// it, with its final ID and record fields, to a sink; Counter counts the IDs a
// build takes without building, so that sub-tries can be built in parallel
// over disjoint ID ranges that are exactly those of a serial build.
//
// Every sorted-input path of the trie package (in-memory bulk loads into a
// frame, streaming loads into a store) goes through Builder, so they all
// write the same records.
package build
