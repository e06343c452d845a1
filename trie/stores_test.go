package trie_test

import (
	"testing"

	"github.com/hexstate/hexstate/internal/trietest"
)

// The tests that run on every kind of store live in internal/trietest; here they
// run on the memory backend (package rocks runs them on RocksDB).

// From trie/frames_test.go.
func TestFramesReadFallThrough(t *testing.T) { trietest.FramesReadFallThrough(t, trietest.Memory) }

func TestFramesForks(t *testing.T) { trietest.FramesForks(t, trietest.Memory) }

func TestFramesRollback(t *testing.T) { trietest.FramesRollback(t, trietest.Memory) }

func TestFramesDeleteAccountStorage(t *testing.T) {
	trietest.FramesDeleteAccountStorage(t, trietest.Memory)
}

func TestFramesStorageEmpties(t *testing.T) { trietest.FramesStorageEmpties(t, trietest.Memory) }

// From trie/state_test.go.
func TestStateProofs(t *testing.T) { trietest.StateProofs(t, trietest.Memory) }

func TestStateIteratorsFrames(t *testing.T) { trietest.StateIteratorsFrames(t, trietest.Memory) }

// From trie/parallel_test.go.
func TestParallelStackedFrames(t *testing.T) { trietest.ParallelStackedFrames(t, trietest.Memory) }

// From trie/persist_test.go.
func TestPersistReopenGeneric(t *testing.T) { trietest.PersistReopenGeneric(t, trietest.Memory) }

func TestPersistReopenState(t *testing.T) { trietest.PersistReopenState(t, trietest.Memory) }

func TestPersistRootNotRecomputed(t *testing.T) {
	trietest.PersistRootNotRecomputed(t, trietest.Memory)
}

func TestPersistDeletesAcrossBlocks(t *testing.T) {
	trietest.PersistDeletesAcrossBlocks(t, trietest.Memory)
}

func TestPersistKeepsCache(t *testing.T) { trietest.PersistKeepsCache(t, trietest.Memory) }

func TestPersistV2GroupReads(t *testing.T) { trietest.PersistV2GroupReads(t, trietest.Memory) }

// From trie/badinput_test.go.
func TestBadVertexRecord(t *testing.T) { trietest.BadVertexRecord(t, trietest.Memory) }

func TestBadAdminRecord(t *testing.T) { trietest.BadAdminRecord(t, trietest.Memory) }

func TestFormatMismatch(t *testing.T) { trietest.FormatMismatch(t, trietest.Memory) }

func TestFailedOpenWritesNothing(t *testing.T) { trietest.FailedOpenWritesNothing(t, trietest.Memory) }

// From trie/stateroots_test.go.
func TestStateRoots(t *testing.T) { trietest.StateRoots(t, trietest.Memory) }

func TestStateRootsPersist(t *testing.T) { trietest.StateRootsPersist(t, trietest.Memory) }

func TestStateRootsChain(t *testing.T) { trietest.StateRootsChain(t, trietest.Memory) }
