package manual

import "unsafe"

// Arena hands out buffers carved from chunks of manual memory, for data that
// lives and dies together (a persist's encoded batch): Reset makes all of it
// reusable at once, and the chunks the round used are kept for the next, so
// a writer that encodes a batch of similar size every few dozen blocks
// faults that memory in once instead of growing the Go heap by it every
// time. An Arena is not safe for concurrent use; its zero value is ready.
type Arena struct {
	chunks []Region
	next   int      // chunks[:next] are handed out
	own    []Region // regions of their own (Slice's, large buffers'), freed by Reset
}

// ArenaChunk is the size of an arena's chunks.
const ArenaChunk = 1 << 20

// maxKeptChunks bounds what Reset keeps for the next round (256 MiB): a
// bulk load's batch, gigabytes, is not kept.
const maxKeptChunks = 256

// Buffer returns an empty slice with room for at least n bytes: a whole
// chunk, for the caller to append many pieces into, each kept as a slice of
// its own, or for a request larger than a chunk a region of its own. Appends
// within its capacity stay in the arena; one beyond it moves to the Go heap,
// as any append does. The buffer is valid until Reset or Free.
func (a *Arena) Buffer(n int) []byte {
	if n > ArenaChunk {
		return a.region(n)[:0]
	}
	if a.next == len(a.chunks) {
		a.chunks = append(a.chunks, New(ArenaChunk))
	}
	c := a.chunks[a.next].Bytes()
	a.next++
	return c[:0:len(c)]
}

// region returns n bytes of a region of their own, freed by Reset.
func (a *Arena) region(n int) []byte {
	a.own = append(a.own, New(n))
	return a.own[len(a.own)-1].Bytes()
}

// Slice returns an empty slice with room for n Ts, in a region of its own
// outside the Go heap, valid until the arena's Reset or Free: for the large
// slices of records and entries a persist builds, which the collector would
// otherwise scan, pointer by pointer, at every collection while the persist
// is written. Pages are faulted in as the slice fills, so a capacity that is
// an upper bound costs nothing beyond it.
//
// The collector neither scans the slice nor sees what it points to: a T's
// pointers must point into memory kept alive by other means (the arena's
// buffers, a Region, Go memory referenced from the heap too), never to
// memory that only the slice refers to. An append beyond n moves the slice
// to the Go heap, as any append does.
func Slice[T any](a *Arena, n int) []T {
	if n <= 0 {
		return nil
	}
	var zero T
	a.region(n * int(unsafe.Sizeof(zero)))
	return Typed[T](&a.own[len(a.own)-1])[:0]
}

// Reset makes every buffer the arena handed out invalid and its memory
// reusable. It keeps as many chunks as the round used (up to 256 MiB) and
// frees the rest, and the regions of their own (Slice's, large buffers').
func (a *Arena) Reset() {
	keep := min(a.next, maxKeptChunks)
	for i := keep; i < len(a.chunks); i++ {
		a.chunks[i].Free()
	}
	a.chunks, a.next = a.chunks[:keep], 0
	a.freeOwn()
}

// freeOwn frees the regions of their own.
func (a *Arena) freeOwn() {
	for i := range a.own {
		a.own[i].Free()
	}
	a.own = a.own[:0]
}

// Free releases all of the arena's memory; the arena is empty, and usable
// again, afterwards.
func (a *Arena) Free() {
	for i := range a.chunks {
		a.chunks[i].Free()
	}
	a.freeOwn()
	*a = Arena{}
}

// Bytes reports the memory the arena holds: its chunks and its regions of
// their own.
func (a *Arena) Bytes() int {
	n := len(a.chunks) * ArenaChunk
	for i := range a.own {
		n += len(a.own[i].Bytes())
	}
	return n
}
