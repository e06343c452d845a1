// Package framestore holds the vertices one frame of a trie database changed,
// by vertex ID: the IDs the frame allocated itself in a slice, older ones in a
// map behind a small Bloom filter, so that a read falling through a long chain
// of frames costs little at each frame it passes.
//
// A Store is not safe for concurrent use, except that after Extend several
// goroutines may SetSized different IDs.
package framestore
