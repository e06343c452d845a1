// Package trie is hexstate's Ethereum state database: a hexary Merkle-Patricia
// trie stored as vertices addressed by 64-bit IDs, computing go-ethereum's state
// roots and EIP-1186 proofs.
//
// # Database, frames and the generic trie
//
// A DB (Open, on a Backend such as rocks.Store or NewMemoryBackend) holds one
// state: the account trie and, hanging off account leaves, the accounts'
// storage tries. Its persisted base has a block number (DB.Block) and a root
// (DB.StateRoot).
//
// A Frame is one block's changes on top of a parent frame or of the base, held
// in memory. DB.Begin starts a frame on the base and Frame.Begin a child frame
// on a frame, so frames form a tree and forks are kept side by side; a frame
// with a child is sealed (read-only). The state is read and written only
// through a frame's account and slot calls: UpdateAccount, Account,
// DeleteAccount, UpdateStorage, Storage, StateRoot, StorageRoot, AccountProof,
// StorageProof, the Accounts and StorageSlots iterators, and BulkLoadAccounts
// for an empty state. Keys are hashes: keccak(address) and keccak(slot).
// Hashing is lazy: a write only marks the path it changed, and StateRoot
// re-hashes those paths, in parallel under the root when Options.Workers > 1.
//
// Trie (NewTrie) is the standalone in-memory generic trie over byte keys, for
// tries a client builds and discards (transactions, receipts): Put, Get,
// Delete, Hash, Prove and Iterator, on the same merge, hashing and proof code
// as the state. VerifyProof checks a proof of either kind against a root.
//
// # Persistence
//
// DB.Persist(fr, block) writes fr and its unpersisted ancestors to the backend
// in one atomic batch — every changed vertex, every deletion, and the admin
// record with format, allocator top, block and root — and makes fr the new
// base. Frames that do not descend from it answer ErrStale from then on;
// Frame.Rollback drops a frame and its descendants the same way. If the write
// fails, nothing in memory changes. DB.NewStateLoader streams a whole state in
// hash order (snap sync) into an empty database with one atomic commit at the
// end. Open checks the stored format (a *FormatError names trie-migrate when a
// conversion is needed) and the root.
//
// # Concurrency
//
// A Frame is written by one goroutine at a time and may be read (accounts,
// storage, roots, proofs) by several at once; different frames, and a DB's
// methods, may be used from several goroutines at once. Misuse (a frame of
// another DB, a block number out of order, a write overlapping another call
// on the same frame, use after Close) is reported as an error.
//
// Vertices, the layouts of format v1 and v2 (package vertex), the per-frame
// vertex stores, the hasher and the vertex-record cache are internal: the API
// above is all a caller sees. docs/design.md explains the design,
// docs/format.md every stored byte, and docs/integration.md a client's
// per-block loop.
package trie
