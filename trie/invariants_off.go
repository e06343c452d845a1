//go:build !invariants

package trie

// invariants is false in ordinary builds: the invariant checker runs only when
// a test calls it. Build with `-tags invariants` to run it after every write
// and Persist (see invariants_on.go).
const invariants = false
