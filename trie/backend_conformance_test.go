package trie_test

import (
	"testing"

	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/trie/backendtest"
)

// TestMemoryBackend runs the backend conformance suite on the memory backend.
// (Its Close keeps the records, so a reopen is the same value: RunDurable's
// reopen checks run on a backend per directory.)
func TestMemoryBackend(t *testing.T) {
	backendtest.Run(t, func(t *testing.T) trie.Backend { return trie.NewMemoryBackend() })
}

func TestMemoryBackendDurable(t *testing.T) {
	stores := map[string]trie.Backend{}
	backendtest.RunDurable(t, func(t *testing.T, dir string) trie.Backend {
		if stores[dir] == nil {
			stores[dir] = trie.NewMemoryBackend()
		}
		return stores[dir]
	})
}
