package rocks

// #cgo LDFLAGS: -lrocksdb
// #include "rocksdb/c.h"
import "C"

import (
	"unsafe"

	"github.com/linxGnu/grocksdb"
)

// destroyOptionsCopy frees the native options of o, made by o's original's
// Clone. grocksdb's Clone copies the Go struct, so the copy shares the
// original's environment, comparator and other handles, and Destroy on it
// would free them a second time: only the options object is the copy's own.
func destroyOptionsCopy(o *grocksdb.Options) {
	C.rocksdb_options_destroy(*(**C.rocksdb_options_t)(unsafe.Pointer(o)))
}
