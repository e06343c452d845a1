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
	slices []Region // the regions of Slice, one each, freed by Reset
}

// ArenaChunk is the size of an arena's chunks.
const ArenaChunk = 1 << 20

// maxKeptChunks bounds what Reset keeps for the next round (256 MiB): a
// bulk load's batch, gigabytes, is not kept.
const maxKeptChunks = 256

// Buffer returns an empty slice with room for at least n bytes: a whole
// chunk, for the caller to append many pieces into, each kept as a slice of
// its own. Appends within its capacity stay in the arena; one beyond it moves
// to the Go heap, as any append does. A request larger than a chunk is served
// from the Go heap. The buffer is valid until Reset or Free.
func (a *Arena) Buffer(n int) []byte {
	if n > ArenaChunk {
		return make([]byte, 0, n)
	}
	if a.next == len(a.chunks) {
		a.chunks = append(a.chunks, New(ArenaChunk))
	}
	c := a.chunks[a.next].Bytes()
	a.next++
	return c[:0:len(c)]
}

// Slice returns an empty slice with room for n Ts (of one ordinary Go type:
// no channels or maps), in a region of its own outside the Go heap, valid
// until the arena's Reset or Free: for the large slices of records and
// entries a persist builds, which the collector would otherwise scan, pointer
// by pointer, at every collection while the persist is written. Pages are
// faulted in as the slice fills, so a capacity that is an upper bound costs
// nothing beyond it.
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
	r := New(n * int(unsafe.Sizeof(zero)))
	a.slices = append(a.slices, r)
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(r.Bytes()))), n)[:0]
}

// Reset makes every buffer the arena handed out invalid and its memory
// reusable. It keeps as many chunks as the round used (up to 256 MiB) and
// frees the rest, and the slices' regions.
func (a *Arena) Reset() {
	keep := min(a.next, maxKeptChunks)
	for i := keep; i < len(a.chunks); i++ {
		a.chunks[i].Free()
	}
	a.chunks, a.next = a.chunks[:keep], 0
	a.freeSlices()
}

// freeSlices frees the regions of Slice.
func (a *Arena) freeSlices() {
	for i := range a.slices {
		a.slices[i].Free()
	}
	a.slices = a.slices[:0]
}

// Free releases all of the arena's memory; the arena is empty, and usable
// again, afterwards.
func (a *Arena) Free() {
	for i := range a.chunks {
		a.chunks[i].Free()
	}
	a.freeSlices()
	*a = Arena{}
}

// Bytes reports the memory the arena holds: its chunks and its slices'
// regions.
func (a *Arena) Bytes() int {
	n := len(a.chunks) * ArenaChunk
	for i := range a.slices {
		n += len(a.slices[i].Bytes())
	}
	return n
}
