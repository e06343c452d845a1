package trie

import "fmt"

// Compactor is implemented by a Backend that can bring its store into its
// final shape after a build, as if no write had ever been buffered: for
// RocksDB (rocks.Store.CompactBuilt) every key compacted into sorted files at
// the bottom level. A build (StateLoader.Commit, DB.CopyFrom, the Persist of a
// BulkLoadAccounts frame) calls it before it returns, so that the blocks
// after it do not read through level-0 files and overlapping levels, nor pay
// for the compactions RocksDB would otherwise run under them
// (docs/design.md "Builds leave a compacted store").
type Compactor interface {
	CompactBuilt() error
}

// compactBuilt compacts the backend after a build (what names it for the
// error), when it is a Compactor. The caller holds neither db.mu nor wmu: a
// compaction takes long, and reads and writes may go on beside it.
func (db *DB) compactBuilt(what string) error {
	c, ok := db.backend.(Compactor)
	if !ok {
		return nil
	}
	if err := c.CompactBuilt(); err != nil {
		return fmt.Errorf("trie: %s: compacting the built store: %w", what, err)
	}
	return nil
}
