package vertex

// Reads of a record's fields in place, for callers on hot paths that need
// one or two of them and not a decoded vertex (Decode checks the rest).

// HasKey reports whether rec, a record made by Encode, stores its vertex's
// key: a branch's whose key is a 32-byte hash.
func HasKey(rec []byte) bool {
	return len(rec) > 0 && rec[0]&3 >= tagBranchV2 && rec[0]&tagHasKey != 0
}

// AccountStorage reads from rec, a record made by Encode, what hashing an
// account leaf needs to know of its storage, without decoding the rest and
// without allocating: for an account leaf's record, its storage trie's ID
// (NoID: no storage) and whether the record carries the storage root
// (Account.StorageKey). ok is false for any other record, or one too short
// to hold those fields; it checks nothing else (Decode does).
func AccountStorage(rec []byte) (storage ID, rootRecorded, ok bool) {
	if RecordKind(rec) != Leaf || PayloadKind(rec[0]>>2&3) != AccountPayload {
		return NoID, false, false
	}
	d := decoder{b: rec, off: 1}
	d.take(int(min(d.uvarint(), uint64(len(rec))+1))) // the path
	m := d.take(1)
	if m == nil {
		return NoID, false, false
	}
	mask := m[0]
	if mask&accNonce != 0 {
		d.sbe(8)
	}
	if mask&accBalance != 0 {
		d.sbe(32)
	}
	if mask&accCode != 0 {
		d.take(32)
	}
	if mask&accStorage != 0 {
		storage = ID(d.uint64())
	}
	if d.err != nil {
		return NoID, false, false
	}
	return storage, mask&accRootKey != 0, true
}
