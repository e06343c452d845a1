package trie

import (
	"context"
	"sync"

	"github.com/hexstate/hexstate/vertex"
)

// eachLeafEntry on several goroutines. The entries must reach fn in key
// order, one at a time, while the reads that find them (the walk's cost: a
// point read per vertex in format v1, a range read per branch in v2) run in
// parallel. So the account trie is cut, from the top, into parts small
// enough to buffer: the sub-tries a few branch levels down (and any leaf
// above them), in key order. Workers walk parts in that order, each into a
// bounded channel of its own; fn is called from the caller's goroutine,
// draining part after part. At most workers+1 parts are in flight, so
// memory stays bounded by the parts' channels whatever the state's size,
// and a worker ahead of fn waits when its part's channel is full.

// leafPart is one sub-trie of a parallel leaf walk: the vertex at its top
// and its nibble path.
type leafPart struct {
	v      *node
	prefix []byte
}

const (
	leafPartVertices = 1 << 16 // about how many vertices a part should hold
	leafChunk        = 1024    // entries per chunk a worker hands over
	leafPartChunks   = 16      // chunks a part's channel buffers
)

// leafChunkOf is a run of entries with their bytes in one arena.
type leafChunkOf struct {
	keys, vals [][]byte
	arena      kvArena
}

func newLeafChunk() *leafChunkOf { return &leafChunkOf{arena: kvArena{chunk: 128 << 10}} }

func (c *leafChunkOf) add(key, val []byte) {
	k, v := c.arena.add(key, val)
	c.keys, c.vals = append(c.keys, k), append(c.vals, v)
}

// leafPartLevels is how many branch levels a parallel leaf walk of a state
// of top vertices cuts above its parts: 16^levels parts of about
// leafPartVertices vertices.
func leafPartLevels(top vertex.ID) int {
	levels := 1
	for n := uint64(top) / leafPartVertices; n >= 16; n /= 16 {
		levels++
	}
	return levels
}

// eachLeafEntryParallel is eachLeafEntry from root on workers goroutines,
// with parts levels branch levels down.
func (db *DB) eachLeafEntryParallel(ctx context.Context, root *node, workers, levels int, fn func(key, val []byte) error) error {
	var parts []leafPart
	split := leafWalk{db: db, ctx: ctx}
	var cut func(v *node, prefix []byte, levels int) error
	cut = func(v *node, prefix []byte, levels int) error {
		if levels == 0 || v.Kind != vertex.Branch {
			parts = append(parts, leafPart{v, prefix})
			return nil
		}
		kids, err := split.children(v)
		if err != nil {
			return err
		}
		p := append(prefix[:len(prefix):len(prefix)], v.Path...)
		for n, c := range kids {
			if c != nil {
				if err := cut(c, append(p[:len(p):len(p)], byte(n)), levels-1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := cut(root, nil, levels); err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	outs := make([]chan *leafChunkOf, len(parts))
	errs := make([]error, len(parts)) // errs[i] is set before outs[i] is closed
	for i := range outs {
		outs[i] = make(chan *leafChunkOf, leafPartChunks)
	}
	jobs := make(chan int)
	window := make(chan struct{}, workers+1) // a token per part in flight
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // hands parts out in order, as the window allows
		defer wg.Done()
		defer close(jobs)
		for i := range parts {
			select {
			case window <- struct{}{}:
			case <-ctx.Done():
				return
			}
			select {
			case jobs <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				errs[i] = db.walkLeafPart(ctx, parts[i], outs[i])
				close(outs[i])
			}
		}()
	}
	err := func() error {
		for i := range parts {
			for {
				if err := ctx.Err(); err != nil {
					return err
				}
				var c *leafChunkOf
				var ok bool
				select {
				case c, ok = <-outs[i]:
				case <-ctx.Done(): // the caller's: part i may never be handed out
					return ctx.Err()
				}
				if !ok {
					break
				}
				for j, k := range c.keys {
					if err := fn(k, c.vals[j]); err != nil {
						return err
					}
				}
			}
			if errs[i] != nil {
				return errs[i]
			}
			<-window
		}
		return nil
	}()
	cancel() // workers' sends and the hand-out give up; then they end
	wg.Wait()
	return err
}

// walkLeafPart walks part p into out, chunk by chunk.
func (db *DB) walkLeafPart(ctx context.Context, p leafPart, out chan<- *leafChunkOf) error {
	c := newLeafChunk()
	send := func() error {
		select {
		case out <- c:
			c = newLeafChunk()
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	w := leafWalk{db: db, ctx: ctx, fn: func(key, val []byte) error {
		c.add(key, val)
		if len(c.keys) < leafChunk {
			return nil
		}
		return send()
	}}
	if err := w.walk(p.v, p.prefix, nil); err != nil {
		return err
	}
	if len(c.keys) > 0 {
		return send()
	}
	return nil
}
