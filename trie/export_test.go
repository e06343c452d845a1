package trie

// HoldRead makes the caller a reader of fr, as a read in progress on another
// goroutine would, until release is called: tests use it to overlap a write
// with a read deterministically.
func HoldRead(fr *Frame) (release func()) {
	fr.use.RLock()
	return fr.use.RUnlock
}
