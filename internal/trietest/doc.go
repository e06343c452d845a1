// Package trietest holds the test fixtures shared by the tests of package trie
// (on the memory backend, without cgo) and of package rocks (on RocksDB): a
// reopenable store parameterized by backend and format (Store, Each), the
// expected-state models and generators of the state API (Model, Gen, ...) and of
// the generic byte-keyed API (KeyModel, Key, Value, Apply, ...), backend record
// walks (Records, Reachable, CheckNoGarbage), and the test bodies that run on
// every store (FramesReadFallThrough, PersistReopenGeneric, ...), which each
// package calls with its stores.
//
// It is for tests only. It is internal because it reaches a frame's generic
// API, which package trie does not export, through internal/triehook. The
// backend conformance suite is public: trie/backendtest.
package trietest
