// Command trie-bench holds hexstate's differential tests and benchmarks against
// go-ethereum's trie, which serves as the test oracle and the benchmark peer.
// It is a separate module so the root module never depends on go-ethereum.
// See README.md for how to run it.
package main

func main() {}
