package trie

// SourceLaidOut reports whether a copy from db takes it as laid out by the
// builder (sourceLaidOut), so that its walk reads sub-tries by interval
// scans rather than preloading or rebuilding it.
func SourceLaidOut(db *DB) bool {
	return sourceLaidOut(db.backend, db.format, db.base.alloc.Top)
}

// HoldRead makes the caller a reader of fr, as a read in progress on another
// goroutine would, until release is called: tests use it to overlap a write
// with a read deterministically.
func HoldRead(fr *Frame) (release func()) {
	fr.use.RLock()
	return fr.use.RUnlock
}
