//go:build invariants

package trietest

// InvariantChecks is true in builds with the `invariants` tag, where the trie
// checks its invariants after every write and panics on a violation: tests
// that write through a deliberately damaged store, or count backend reads
// (which the checks add to), skip in such a build.
const InvariantChecks = true
