package trie

import (
	"bytes"
	"slices"
	"strings"

	"github.com/hexstate/hexstate/vertex"
)

// The in-memory backend's leaf index: a map from key to value, with the
// RocksDB store's semantics (docs/format.md §7).

func (m *memoryBackend) Leaf(key []byte) ([]byte, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	m.leafRd.Add(1)
	return slices.Clone(m.leaves[string(key)]), nil
}

func (m *memoryBackend) Leaves(keys [][]byte, fn func(int, []byte) error) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	m.leafRd.Add(uint64(len(keys)))
	for i, k := range keys {
		if err := fn(i, m.leaves[string(k)]); err != nil {
			return err
		}
	}
	return nil
}

func (m *memoryBackend) EachLeaf(start []byte, fn func(key, val []byte) error) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	keys := make([]string, 0, len(m.leaves))
	for k := range m.leaves {
		if k >= string(start) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := fn([]byte(k), m.leaves[k]); err != nil {
			return err
		}
	}
	return nil
}

// writeLeaves applies b's leaf-index changes; the caller holds m.mu.
func (m *memoryBackend) writeLeaves(b *vertex.Batch) {
	if b.LeafReset {
		clear(m.leaves)
	}
	for _, p := range b.LeafPrefixDeletes {
		for k := range m.leaves {
			if len(k) == 2*len(p) && strings.HasPrefix(k, string(p)) {
				delete(m.leaves, k)
			}
		}
	}
	for _, l := range b.Leaves {
		if l.Val == nil {
			delete(m.leaves, string(l.Key))
		} else {
			m.leaves[string(l.Key)] = bytes.Clone(l.Val)
		}
	}
}
