package rocks

import (
	"encoding/binary"

	"github.com/hexstate/hexstate/vertex"
)

// The on-disk layout of a hexstate RocksDB store. docs/format.md
// describes it byte by byte; changing anything here changes the store format.
const (
	// cfDefault is RocksDB's always-present column family. It holds the marker
	// and the admin record, nothing else.
	cfDefault = "default"
	// cfVertices holds one key-value pair per vertex.
	cfVertices = "vertices"
	// cfLeaves holds the leaf index (docs/format.md §7). A store written
	// before it existed lacks it; a read-write Open adds it (empty).
	cfLeaves = "leaves"

	// storeVersion is the version of this layout (column families, key
	// encodings), written into the marker. It is not the trie format version,
	// which lives inside the admin record.
	storeVersion uint32 = 1
)

var (
	// markerKey is the default-CF key of the marker written when a store is
	// created.
	markerKey = []byte("hexstate")
	// markerMagic is the first 4 bytes of the marker value; the next 4 are
	// storeVersion, big-endian.
	markerMagic = [4]byte{'H', 'X', 'S', 'T'}
	// adminKey is the default-CF key of the admin record.
	adminKey = []byte("admin")
)

// cfNames lists the column families of a store, in the order Open passes them
// to RocksDB (and so the order of the handles it gets back).
var cfNames = []string{cfDefault, cfVertices, cfLeaves}

// cfNamesNoLeaves are the column families of a store written before the leaf
// index existed.
var cfNamesNoLeaves = cfNames[:2]

// markerValue returns the marker value of this layout version.
func markerValue() []byte {
	v := make([]byte, 8)
	copy(v, markerMagic[:])
	binary.BigEndian.PutUint32(v[4:], storeVersion)
	return v
}

// parseMarker splits a marker value; ok is false when it is not one.
func parseMarker(v []byte) (version uint32, ok bool) {
	if len(v) != 8 || [4]byte(v[:4]) != markerMagic {
		return 0, false
	}
	return binary.BigEndian.Uint32(v[4:]), true
}

// putKey writes the vertices-CF key of id into k (8 bytes).
func putKey(k []byte, id vertex.ID) {
	binary.BigEndian.PutUint64(k, uint64(id))
}

// keyID decodes a vertices-CF key; ok is false when k is not 8 bytes.
func keyID(k []byte) (vertex.ID, bool) {
	if len(k) != 8 {
		return 0, false
	}
	return vertex.ID(binary.BigEndian.Uint64(k)), true
}
