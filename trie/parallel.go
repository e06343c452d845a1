package trie

import (
	"runtime"
	"sync"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/vertex"
)

// parallelMin is how many writes a frame must have made since its last hash
// before the sub-tries under the root are hashed in parallel; below it the
// goroutines cost more than they save.
const parallelMin = 100

// rootKey returns the key of the trie rooted at id. When the frame has many
// unhashed writes and the root is a branch with several void-keyed children, each
// of those sub-tries (with the storage tries hanging off its accounts) is hashed by
// its own worker; the root is then hashed serially from their keys. The result is
// the same as the serial path's: workers only fill in keys of disjoint sub-tries.
func (fr *Frame) rootKey(id vertex.ID) (hashkey.Key, error) {
	workers := fr.db.workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if fr.writes > 0 && fr.db.prefetchDue() {
		if err := fr.prefetchDirty(id, workers); err != nil {
			return hashkey.Key{}, err
		}
	}
	if workers > 1 && fr.writes >= parallelMin {
		if err := fr.hashChildrenParallel(id, workers); err != nil {
			return hashkey.Key{}, err
		}
	}
	k, err := fr.h.key(id)
	if err == nil && id == vertex.RootID {
		fr.writes = 0 // everything below the state root is hashed now
	}
	return k, err
}

func (fr *Frame) hashChildrenParallel(id vertex.ID, workers int) error {
	v, err := fr.get(id)
	if err != nil || v == nil || v.Kind != vertex.Branch || !v.Key.IsVoid() {
		return err
	}
	var dirty []vertex.ID
	for n := 0; n < 16; n++ {
		if c := v.Child(n); c != vertex.NoID {
			cv, err := fr.get(c)
			if err != nil {
				return err
			}
			if cv != nil && cv.Key.IsVoid() {
				dirty = append(dirty, c)
			}
		}
	}
	if len(dirty) < 2 {
		return nil
	}
	fr.db.hashing.Add(1)
	defer fr.db.hashing.Add(-1)
	hashers := make([]hasher, len(dirty))
	errs := make([]error, len(dirty))
	sem := make(chan struct{}, workers)
	var wg sync.WaitGroup
	for i, c := range dirty {
		hashers[i] = hasher{fr: fr, parallel: true}
		wg.Add(1)
		sem <- struct{}{}
		go func(i int, c vertex.ID) {
			defer func() { <-sem; wg.Done() }()
			_, errs[i] = hashers[i].key(c)
		}(i, c)
	}
	wg.Wait()
	for i := range hashers {
		if errs[i] != nil {
			return errs[i]
		}
		for _, p := range hashers[i].pending {
			fr.vtx.Set(p.id, p.v)
		}
	}
	return nil
}
