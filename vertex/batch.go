package vertex

// Batch is one atomic change to a vertex store (trie.Backend): the unit a persist
// writes, so that a crash leaves either the old state or the new one.
type Batch struct {
	Puts    []Record // records to write (insert or overwrite)
	Deletes []ID     // records to remove; deleting an absent ID is not an error
	Admin   []byte   // new admin record; nil leaves it unchanged
}

// Record is one encoded vertex and its ID.
type Record struct {
	ID  ID
	Rec []byte
}

// ReadStats counts the reads a vertex store served, so tests and benchmarks can see
// how many round trips a workload needed.
type ReadStats struct {
	PointReads uint64 // single-record lookups
	RangeReads uint64 // range reads ([first, first+n) scans)
	Records    uint64 // records returned by either
}
