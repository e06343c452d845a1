package trie

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hexstate/hexstate/vertex"
)

// memoryBackend is a Backend in a Go map, with the same semantics as the RocksDB
// store (atomic batches, copied records, ordered range reads), so every trie test
// runs on both.
type memoryBackend struct {
	mu     sync.RWMutex
	recs   map[vertex.ID][]byte
	leaves map[string][]byte
	admin  []byte
	leafRd atomic.Uint64
	point  atomic.Uint64
	ranges atomic.Uint64
	// batches and batchKeys count Vertices calls and their IDs.
	batches, batchKeys atomic.Uint64
	count              atomic.Uint64
}

// NewMemoryBackend returns an empty in-memory Backend.
func NewMemoryBackend() Backend {
	return &memoryBackend{recs: make(map[vertex.ID][]byte), leaves: make(map[string][]byte)}
}

func (m *memoryBackend) Vertex(id vertex.ID) ([]byte, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	m.point.Add(1)
	r, ok := m.recs[id]
	if !ok {
		return nil, nil
	}
	m.count.Add(1)
	return slices.Clone(r), nil
}

func (m *memoryBackend) Vertices(ids []vertex.ID, fn func(int, []byte) error) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	m.batches.Add(1)
	m.batchKeys.Add(uint64(len(ids)))
	for i, id := range ids {
		r, ok := m.recs[id]
		if ok {
			m.count.Add(1)
		} else {
			r = nil
		}
		if err := fn(i, r); err != nil {
			return err
		}
	}
	return nil
}

func (m *memoryBackend) VertexRange(first vertex.ID, n int, fn func(vertex.ID, []byte) error) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	m.ranges.Add(1)
	for i := 0; i < n; i++ {
		if r, ok := m.recs[first+vertex.ID(i)]; ok {
			m.count.Add(1)
			if err := fn(first+vertex.ID(i), r); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *memoryBackend) Admin() ([]byte, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Clone(m.admin), nil
}

func (m *memoryBackend) Write(b *vertex.Batch) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range b.Puts {
		m.recs[r.ID] = b.AppendRecord(make([]byte, 0, b.RecordSize(r.Rec)), r.Rec) // never nil: an empty record is present
	}
	for _, id := range b.Deletes {
		delete(m.recs, id)
	}
	if b.Admin != nil {
		m.admin = slices.Clone(b.Admin)
	}
	m.writeLeaves(b)
	return nil
}

func (m *memoryBackend) Stats() vertex.ReadStats {
	return vertex.ReadStats{PointReads: m.point.Load(), RangeReads: m.ranges.Load(), BatchReads: m.batches.Load(), BatchKeys: m.batchKeys.Load(), Records: m.count.Load(), LeafReads: m.leafRd.Load()}
}

// Close does nothing: the records live as long as the backend value, so a DB
// reopened on it (as tests do to mimic a restart) finds them again.
func (m *memoryBackend) Close() error { return nil }
