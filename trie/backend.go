package trie

import "github.com/hexstate/hexstate/vertex"

// Backend is the persistent store beneath a DB: a map from vertex ID to encoded
// vertex record plus one admin record, and the leaf index: a map from
// account or slot key to the leaf's value, written in the same batches. It is the only interface in hexstate; the
// RocksDB store (package rocks) and the in-memory store (NewMemoryBackend) implement it.
//
// A Backend must be safe for concurrent reads; Write is never called concurrently
// with itself.
type Backend interface {
	// Vertex returns the encoded record of vertex id, or (nil, nil) when there is
	// none. The caller owns the returned slice.
	Vertex(id vertex.ID) ([]byte, error)

	// VertexRange calls fn, in ascending ID order, for every record whose ID lies in
	// [first, first+n). rec is only valid during the call. It is the one-read path
	// a v2 branch uses to load its 16 pre-allocated child slots. An error from fn
	// stops the walk and is returned.
	VertexRange(first vertex.ID, n int, fn func(id vertex.ID, rec []byte) error) error

	// Vertices looks ids up in one batch (RocksDB's MultiGet) and calls fn
	// for each in order with its record, nil when there is none; rec is only
	// valid during the call. It reads a v2 branch's used child slots where
	// VertexRange would read every level of an LSM store whose files overlap
	// the group. An error from fn stops it and is returned.
	Vertices(ids []vertex.ID, fn func(i int, rec []byte) error) error

	// Admin returns the admin record, or (nil, nil) for a store never written.
	Admin() ([]byte, error)

	// Write applies b atomically: after a crash the store holds either everything
	// b wrote or nothing of it. It stores each of b.Puts' records as
	// b.AppendRecord makes it (without children's keys when
	// b.StripChildKeys). It must not keep b or its slices: callers reuse
	// them.
	Write(b *vertex.Batch) error

	// Leaf returns the value of key in the leaf index (docs/format.md §7), or
	// (nil, nil) when it has none. The caller owns the returned slice.
	Leaf(key []byte) ([]byte, error)

	// Leaves looks keys up in the leaf index in one batch (RocksDB's MultiGet)
	// and calls fn for each key in order with its value, nil when absent; val
	// is only valid during the call. An error from fn stops it and is
	// returned.
	Leaves(keys [][]byte, fn func(i int, val []byte) error) error

	// EachLeaf calls fn, in ascending key order, for every leaf-index entry
	// whose key is at least start. key and val are only valid during the call.
	// An error from fn stops the walk and is returned.
	EachLeaf(start []byte, fn func(key, val []byte) error) error

	// Stats returns counters of the reads served so far.
	Stats() vertex.ReadStats

	// Close flushes and releases the store. Calling it again returns nil.
	Close() error
}
