// Package framestore holds the vertices one frame of a trie database changed,
// by vertex ID (Store: the IDs the frame allocated itself in a slice, older
// ones in a map behind a small Bloom filter), and the index of a line of
// frames (ChainIndex: each ID the frames hold, with the position of the
// newest frame holding it), so that a read of a vertex an earlier frame
// changed goes to that frame directly instead of asking every frame between.
// A sealed frame's Store is packed (Pack): its vertices become records in
// one buffer with no Go pointers, decoded again on each lookup, and the
// index keeps where each record is (Where, LookupAt).
// A store's changes can be named by Ref (EachRef, Change): an ordinal, no
// Go pointer, so that a persist's list of them is memory the collector does
// not scan.
// A ChainPool keeps spare indexes whose pages are in memory, so that a new
// line's index, built in one block's Begin, does not take a page fault per
// page of a fresh table.
//
// A sealed frame's records can be encoded, and later stripped of what only
// the newest version of a vertex needs (Supersede, StartRepack), on a
// goroutine of the store's own (StartPack, StartRepack); Finish puts the
// result in place. Records are named by ordinal, so the indexes naming them
// stay right across a repack.
//
// A Store is not safe for concurrent use, except that after Extend several
// goroutines may SetSized different IDs, and that a pack or repack in flight
// reads it beside the caller's reads and Supersede (only Finish changes what
// it reads). A ChainIndex is safe for concurrent
// Gets, not for an Add beside them. A ChainPool is safe for concurrent use.
package framestore
