// Package journal is the file format and file handling of the frame journal
// (docs/format.md, "Frame journal"): an append-only log of entries, one per
// journalled frame, each naming the state it produces (Key) and the state it
// applies to (its parent's Key), with the frame's changed vertex records,
// deletions and allocator top.
//
// A Log is safe for concurrent use. A torn tail (a record cut short by a
// crash, or failing its checksum) ends the log: Open drops it and everything
// after it, reports how many bytes it dropped, and truncates the file there so
// that later appends are reachable. A record that passes its checksum but does
// not decode is corruption (ErrCorrupt), not a torn tail.
package journal
