package rocks

import "fmt"

// JournalDir returns the directory where trie keeps its frame journal: the
// store's own directory (RocksDB ignores files whose names it does not know),
// or "" for a read-only store, which must not be written. It makes Store a
// trie.JournalBackend, so journalling is on by default for RocksDB stores.
func (s *Store) JournalDir() string {
	if s.readOnly {
		return ""
	}
	return s.dir
}

// Sync makes every Write that returned durable against power loss and OS
// crashes by syncing the write-ahead log (a Write without Options.Sync
// survives a crash of the process only). It makes Store a trie.SyncBackend:
// trie syncs before it trims journalled frames that a persist made redundant.
func (s *Store) Sync() error {
	if err := s.acquireWritable(); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	if err := s.db.FlushWAL(true); err != nil {
		return fmt.Errorf("rocks: sync the write-ahead log: %w", err)
	}
	return nil
}
