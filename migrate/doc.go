// Package migrate rewrites a hexstate database from one format version into
// another (v1 → v2, or back) without a resync and without re-hashing: a
// layout change keeps every node's hash key, only vertex IDs change, so Run
// copies the source's vertex records in trie order into a new database,
// giving each vertex its ID in the target layout (trie.DB.CopyFrom). The
// target is byte for byte the store the builder (trie.StateLoader) makes
// from the same accounts.
//
// Progress is checkpointed beside the target (MIGRATION-IN-PROGRESS, see
// Checkpoint): an interrupted run resumes where its last checkpoint was.
// Nothing in the target is visible before the final write, which commits the
// copy at the source's block; a target directory that still holds the
// checkpoint file is an unfinished migration, not a usable database. Run
// leaves the checkpoint; Finish closes the verified target and then removes
// it, so a stop anywhere before Finish returns is resumed (and verified
// again) by the next run.
//
// After the copy Run verifies the target: its root equals the source's, its
// record count is the number of vertices copied, and proofs of a sample of
// accounts and slots verify against the root and prove the source's values;
// VerifyFull also recomputes every key from the leaves (trie.Frame.Check).
//
// CheckPaths holds the refusals a command needs before it writes anything
// (a target inside the source, an existing backup name).
package migrate
