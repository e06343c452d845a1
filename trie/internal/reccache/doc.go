// Package reccache is the vertex record cache above a trie database's backend:
// encoded records of persisted vertices, keyed by vertex ID, in sharded rings of
// fixed-size chunks that hold no Go pointers, bounded in bytes, first in, first
// out. It knows records only as bytes; decoding and checking them is its
// caller's.
package reccache
