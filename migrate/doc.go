// Package migrate rewrites a hexstate database from one format version into
// another (v1 → v2, or back) without a resync: it streams the source's state in
// key order into a new database of the target format, persisting in chunks and
// recording how far it got so an interrupted run resumes where it stopped, and
// verifies at the end that the new state root equals the source's.
//
// Intermediate chunks are persisted as block 0; only the final commit is
// persisted at the source's block. A target directory that still holds the
// checkpoint file (MIGRATION-IN-PROGRESS, see Checkpoint) is an unfinished
// migration with a partial state root, not a usable database, even though it
// opens as one.
//
// Run copies between two open databases (the target empty, or holding the
// checkpoint of an interrupted run); cmd/trie-migrate wraps it with the
// directories, the checkpoint file's place and the final swap (-replace).
package migrate
