package trie

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/hexstate/hexstate/hashkey"
)

// PrefetchReads reads ahead the leaf-index entries that Account (for
// accounts) and Storage (for slots) will need: those whose trie paths are
// not in memory. The entries are read in batches (RocksDB's MultiGet) on
// several goroutines and held until the next persist lands, so that the
// reads that follow need no backend read. It is meant for the keys a block
// reads without writing them: a key a block writes needs its path
// (Prefetch), and a path in memory answers its reads too. Without a leaf
// index it does nothing. Like Prefetch it is a read of fr, to be called on the
// block's parent frame beside the block.
func (fr *Frame) PrefetchReads(accounts []hashkey.Hash, slots []StorageKey) error {
	if err := fr.enter(useRead, "prefetch reads"); err != nil {
		return err
	}
	defer fr.leave(useRead)
	db := fr.db
	if !db.leafIdx {
		return nil
	}
	var keys [][]byte
	add := func(addr hashkey.Hash, slot *hashkey.Hash) error {
		var c coldRead
		_, key, err := fr.locate(addr, slot, &c)
		if key != nil {
			if _, ok := db.leaves.get(key); !ok {
				keys = append(keys, key)
			}
		}
		return err
	}
	for i := range accounts {
		if err := add(accounts[i], nil); err != nil {
			return fmt.Errorf("trie: prefetch reads: %w", err)
		}
	}
	for i := range slots {
		if err := add(slots[i].Account, &slots[i].Slot); err != nil {
			return fmt.Errorf("trie: prefetch reads: %w", err)
		}
	}
	vals, err := db.fetchLeaves(keys)
	if err != nil {
		return fmt.Errorf("trie: prefetch reads: %w", err)
	}
	db.leaves.fill(keys, vals)
	return nil
}

// fetchLeaves reads the index values of keys (nil: absent) in batches of
// prefetchLeafBatch keys, prefetchReaders batches per core at a time.
func (db *DB) fetchLeaves(keys [][]byte) ([][]byte, error) {
	vals := make([][]byte, len(keys))
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		ferr error
		sem  = make(chan struct{}, prefetchReaders*runtime.GOMAXPROCS(0))
	)
	for lo := 0; lo < len(keys); lo += prefetchLeafBatch {
		hi := min(lo+prefetchLeafBatch, len(keys))
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := db.backend.Leaves(keys[lo:hi], func(i int, val []byte) error {
				if val != nil {
					vals[lo+i] = append([]byte{}, val...)
				}
				return nil
			})
			if err != nil {
				mu.Lock()
				ferr = err
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return vals, ferr
}

// prefetchLeafBatch is how many keys one MultiGet of PrefetchReads asks for.
const prefetchLeafBatch = 256
