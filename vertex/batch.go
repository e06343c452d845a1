package vertex

// Batch is one atomic change to a vertex store (trie.Backend): the unit a persist
// writes, so that a crash leaves either the old state or the new one.
type Batch struct {
	Puts    []Record // records to write (insert or overwrite)
	Deletes []ID     // records to remove; deleting an absent ID is not an error
	Admin   []byte   // new admin record; nil leaves it unchanged

	// The leaf index's changes (docs/format.md §7), applied in this order
	// after the records: LeafReset removes every entry (the marker included),
	// LeafPrefixDeletes remove every 64-byte key that starts with one of
	// them (a deleted storage trie), then Leaves are written in order.
	LeafReset         bool
	LeafPrefixDeletes [][]byte
	Leaves            []LeafEntry

	// Load marks a batch of a load (a trie StateLoader's or copy's) into
	// an empty store, whose batches lie above one another in key order: a
	// backend that can link sorted files in (rocks' ingestion) may write it
	// so whatever its size, where a write through its log and memtables
	// would be flushed to files and compacted once more. It changes how b
	// is written, not what.
	Load bool

	// StripChildKeys says Puts' branch records may carry their children's
	// keys (HasChildKeys) and are stored without them: a backend writes
	// each record as AppendRecord makes it. A writer that keeps the records
	// with the keys for itself (trie's vertex cache) so needs no second,
	// stripped copy of them.
	StripChildKeys bool
}

// AppendRecord appends to dst the bytes a backend stores for rec, one of b's
// Puts' records: rec itself, or without its children's keys when
// b.StripChildKeys (AppendWithoutChildKeys).
func (b *Batch) AppendRecord(dst, rec []byte) []byte {
	if b.StripChildKeys {
		return AppendWithoutChildKeys(dst, rec)
	}
	return append(dst, rec...)
}

// RecordSize returns the length of what AppendRecord appends for rec.
func (b *Batch) RecordSize(rec []byte) int {
	if b.StripChildKeys {
		return len(rec) - ChildKeysSize(rec)
	}
	return len(rec)
}

// LeafEntry is one change of the leaf index: Val is the new value, nil deletes
// Key (deleting an absent key is not an error).
type LeafEntry struct {
	Key []byte
	Val []byte
}

// LeafChanges reports whether b changes the leaf index.
func (b *Batch) LeafChanges() bool {
	return b.LeafReset || len(b.LeafPrefixDeletes) > 0 || len(b.Leaves) > 0
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
	// BatchReads counts the batched lookups of several IDs (a v2 group's
	// used slots) and BatchKeys the IDs they looked up, found or not.
	BatchReads, BatchKeys uint64
	Records               uint64 // records returned by any of them
	// LeafReads counts the keys looked up in the leaf index (Leaf and
	// Leaves), found or not.
	LeafReads uint64
}

// Reads returns the backend calls that read vertex records: point, range
// and batch reads.
func (s ReadStats) Reads() uint64 { return s.PointReads + s.RangeReads + s.BatchReads }
