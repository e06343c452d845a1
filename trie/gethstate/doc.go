// Package gethstate runs go-ethereum's EVM on hexstate: it is the bridge between
// go-ethereum v1.17 (core/state, core/tracing) and hexstate's state frames
// (package github.com/hexstate/hexstate/trie).
//
// It has three parts, one file each:
//
//   - Reader (reader.go) is a go-ethereum state.Reader over a hexstate frame:
//     accounts and storage come from the frame, contract code from a go-ethereum
//     key-value store (ethdb) the client gives it. state.NewWithReader(root, db,
//     reader) then executes blocks with hexstate as the EVM's read source.
//   - ApplyStateUpdate and ApplyTracingUpdate (apply.go) write a block's changes
//     to a frame, from the hashed *state.StateUpdate that StateDB.CommitWithUpdate
//     returns or from the *tracing.StateUpdate the OnStateUpdate hook receives
//     (storage keys raw from Cancun on, hashed before). Account deletions,
//     re-creations within one block and pre-Cancun storage wipes are all carried
//     by these updates; VerifyStateUpdateOrigins and VerifyTracingOrigins
//     (verify.go) check a parent frame against the updates' previous values.
//   - Chain (chain.go) is the client's block loop: the parent frame of a block by
//     block hash or state root, a child frame per block, the state root compared
//     with the header, persistence of a block once it is a given depth below the
//     newest one, and forks kept side by side until persistence abandons them.
//
// This is a separate module (github.com/hexstate/hexstate/trie/gethstate) so that
// hexstate itself never depends on go-ethereum. Until a version is published a
// client depends on it through a replace directive or a go.work file; see
// docs/integration.md, "Running go-ethereum's EVM on hexstate".
package gethstate
