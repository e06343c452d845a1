// Package backendtest is a conformance suite for implementations of
// trie.Backend, in the manner of go-ethereum's ethdb/dbtest: a backend's own
// tests call Run (and RunDurable, when the backend persists to a directory) to
// check the contract documented on trie.Backend. It is meant for tests only.
//
//	func TestBackend(t *testing.T) {
//		backendtest.Run(t, func(t *testing.T) trie.Backend { return myBackend(t) })
//	}
package backendtest
