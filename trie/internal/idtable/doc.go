// Package idtable is an open-addressed hash table keyed by vertex ID, for the
// trie's indexes that are looked up once per vertex read or written: the
// frame chain's (ID to the newest frame holding it). (The vertex cache keeps
// its own, smaller slots: trie/internal/reccache.)
//
// Entries are (ID, value) pairs side by side in one slice, found by linear
// probing from a slot the ID's hash picks, so that a lookup usually costs one
// CPU cache miss, where a Go map costs two or three (its control word, then
// its slots). With a value type holding no pointers the table holds none and
// the garbage collector never scans it. vertex.NoID (0, never a vertex)
// marks a free slot. A removal moves the later entries of its probe run back
// instead of leaving a tombstone, so a lookup never probes past the run of
// the ID's home slot. The table grows when an insert would fill more than
// its load bound (in quarters of its slots, chosen by the user: a half keeps
// the runs that a lookup of an absent ID walks short, three quarters saves
// memory) and never shrinks.
package idtable
