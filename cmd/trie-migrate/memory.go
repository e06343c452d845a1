package main

import "runtime/debug"

// tightenGC makes the collector run when the Go heap has grown by a quarter
// since the last collection, not doubled: the migration's Go heap is mostly
// its batches' byte buffers (the leaf index's ~16 MiB batches, twice over),
// which cost little to mark, and the default let them take ~130 MB more
// than they hold.
func tightenGC() { debug.SetGCPercent(25) }
