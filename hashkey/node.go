package hashkey

// Node encoders: each appends the RLP of one Ethereum trie node to dst, computing
// the list length first so nothing is encoded twice and nothing is allocated beyond
// dst's growth. Keys of children are written as references (see Key).

// AppendLeaf appends the RLP of a leaf node [HP(path, leaf), value].
func AppendLeaf(dst, path, value []byte) []byte {
	hp := HexPrefixSize(len(path))
	payload := stringSizeN(hp) + StringSize(value)
	dst = AppendListHeader(dst, payload)
	dst = appendHPString(dst, path, true)
	return AppendString(dst, value)
}

// AppendExtension appends the RLP of an extension node [HP(path), child].
func AppendExtension(dst, path []byte, child *Key) []byte {
	hp := HexPrefixSize(len(path))
	payload := stringSizeN(hp) + child.refSize()
	dst = AppendListHeader(dst, payload)
	dst = appendHPString(dst, path, false)
	return child.appendRef(dst)
}

// AppendBranch appends the RLP of a branch node [child0..child15, value]; void
// children and a nil value encode as the empty string.
func AppendBranch(dst []byte, children *[16]Key, value []byte) []byte {
	payload := StringSize(value)
	for i := range children {
		payload += children[i].refSize()
	}
	dst = AppendListHeader(dst, payload)
	for i := range children {
		dst = children[i].appendRef(dst)
	}
	return AppendString(dst, value)
}

// stringSizeN is the encoded size of a string of n bytes whose first byte is at
// least 0x80 or that is not a single byte (true of every hex-prefix encoding but
// the one-byte forms, which appendHPString handles).
func stringSizeN(n int) int {
	if n == 1 {
		return 1 // a one-byte HP is 0x00..0x3f: always below 0x80, header-less
	}
	return headerLen(n) + n
}

// appendHPString appends HP(path) as an RLP string.
func appendHPString(dst, path []byte, leaf bool) []byte {
	hp := HexPrefixSize(len(path))
	if hp > 1 {
		dst = appendHeader(dst, 0x80, hp)
	}
	return AppendHexPrefix(dst, path, leaf)
}
