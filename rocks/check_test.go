package rocks_test

import (
	"testing"

	"github.com/hexstate/hexstate/internal/trietest"
)

// From trie/check_test.go: the whole-state check on RocksDB stores, clean and
// with one record changed through the store.

func TestCheckClean(t *testing.T) { trietest.CheckClean(t, rocksStore) }

func TestCheckFindsTampering(t *testing.T) { trietest.CheckFindsTampering(t, rocksStore) }
