package rocks_test

import (
	"testing"

	"github.com/hexstate/hexstate/internal/trietest"
	"github.com/hexstate/hexstate/rocks"
	"github.com/hexstate/hexstate/trie"
)

// rocksStore opens the test stores of internal/trietest on RocksDB.
var rocksStore = trietest.Opener{Name: "rocksdb", Open: func(tb testing.TB, dir string) trie.Backend {
	tb.Helper()
	s, err := rocks.Open(dir, testRocksOptions())
	if err != nil {
		tb.Fatalf("rocks.Open(%s): %v", dir, err)
	}
	return s
}}

// testRocksOptions keeps the test stores small.
func testRocksOptions() *rocks.Options {
	return &rocks.Options{BlockCacheBytes: 8 << 20, WriteBufferBytes: 4 << 20, BackgroundJobs: 2}
}

// The tests that run on every kind of store live in internal/trietest; package
// trie runs them on the memory backend, here they run on RocksDB.

// From trie/frames_test.go.
func TestFramesReadFallThrough(t *testing.T) { trietest.FramesReadFallThrough(t, rocksStore) }

func TestFramesForks(t *testing.T) { trietest.FramesForks(t, rocksStore) }

func TestFramesRollback(t *testing.T) { trietest.FramesRollback(t, rocksStore) }

func TestFramesDeleteAccountStorage(t *testing.T) { trietest.FramesDeleteAccountStorage(t, rocksStore) }

func TestFramesStorageEmpties(t *testing.T) { trietest.FramesStorageEmpties(t, rocksStore) }

// From trie/state_test.go.
func TestStateProofs(t *testing.T) { trietest.StateProofs(t, rocksStore) }

func TestStateIteratorsFrames(t *testing.T) { trietest.StateIteratorsFrames(t, rocksStore) }

// From trie/parallel_test.go.
func TestParallelStackedFrames(t *testing.T) { trietest.ParallelStackedFrames(t, rocksStore) }

// From trie/persist_test.go.
func TestPersistReopenGeneric(t *testing.T) { trietest.PersistReopenGeneric(t, rocksStore) }

func TestPersistReopenState(t *testing.T) { trietest.PersistReopenState(t, rocksStore) }

func TestPersistRootNotRecomputed(t *testing.T) { trietest.PersistRootNotRecomputed(t, rocksStore) }

func TestPersistDeletesAcrossBlocks(t *testing.T) { trietest.PersistDeletesAcrossBlocks(t, rocksStore) }

func TestPersistKeepsCache(t *testing.T) { trietest.PersistKeepsCache(t, rocksStore) }

func TestPersistV2GroupReads(t *testing.T) { trietest.PersistV2GroupReads(t, rocksStore) }

// From trie/badinput_test.go.
func TestBadVertexRecord(t *testing.T) { trietest.BadVertexRecord(t, rocksStore) }

func TestBadAdminRecord(t *testing.T) { trietest.BadAdminRecord(t, rocksStore) }

func TestFormatMismatch(t *testing.T) { trietest.FormatMismatch(t, rocksStore) }

func TestFailedOpenWritesNothing(t *testing.T) { trietest.FailedOpenWritesNothing(t, rocksStore) }

// From trie/stateroots_test.go.
func TestStateRoots(t *testing.T) { trietest.StateRoots(t, rocksStore) }

func TestStateRootsPersist(t *testing.T) { trietest.StateRootsPersist(t, rocksStore) }

func TestStateRootsChain(t *testing.T) { trietest.StateRootsChain(t, rocksStore) }
