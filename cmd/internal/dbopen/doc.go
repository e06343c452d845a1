// Package dbopen opens a trie database on a RocksDB directory (a rocks.Store
// with default options, and a trie.DB of a given format on it), the one step
// the hexstate commands (cmd/hexstate-demo, cmd/trie-migrate) start with.
package dbopen
