//go:build invariants

package trie

// invariants is true in builds with the `invariants` tag, a debugging build:
// every write to a frame and every Persist then runs the invariant checker of
// invariants.go on the frame's unpersisted changes and panics on the first
// violation, naming the vertex. Writes get slower (sampled checks of the whole
// change set); never ship it.
const invariants = true
