package framestore

import (
	"runtime"

	"github.com/hexstate/hexstate/trie/internal/idtable"
	"github.com/hexstate/hexstate/vertex"
)

// ChainIndex maps every vertex ID the stores of a line of frames hold to the
// position (seq) of the newest of those frames that holds it. A read that
// misses its own frame asks the index once and goes straight to the one frame
// that has the vertex, or to the persisted state when no frame has it,
// instead of walking the frames below one by one: with 64 unpersisted
// frames, that walk probed up to 64 per-frame filters and maps, a cache miss
// each (a third of a block's apply time, docs/benchmarks.md §9).
//
// The index is an idtable.Table of IDs and seqs, at most half full (a read
// that misses every frame, the common case, walks a probe run to its end:
// half full keeps the runs short). Stores are added oldest first, so a later
// Add overwrites an ID's seq with the newer frame's. An ID is only ever
// added, never removed.
//
// A ChainIndex is not safe for an Add beside other calls: the trie adds under
// the database's exclusive lock, and reads under its shared lock.
//
// For a packed store (Store.Pack) the index also keeps where in it the
// vertex's record is, so a read goes from the index to the record with no
// probe of the frame's own map: the table's 16-byte slots have room for it
// beside the seq.
//
// The table is in memory from manual, outside the Go heap: at 10M accounts a
// 64-block line's index is 64 MiB, which the collector would otherwise count
// twice in the heap it lets grow (docs/design.md §5, "The chain index
// outside the Go heap"). Its memory is freed by Free (the pool, dropping a
// spare) or else once the index is unreachable (a line's, when nothing
// reaches the line any more); every method keeps the index reachable while
// it reads the table.
//
// A line's index grows as its frames come (the first line after Open starts
// from one frame's IDs and doubles several times), and a growth rehashes
// every ID into a table twice the size, in fresh pages: the block whose
// Begin did it was the slowest of its run (docs/benchmarks.md §9, "The
// first line's index grown ahead"). So Add
// grows it ahead: once the next Add might not fit, the larger table is
// built on a goroutine of its own beside the reads (which only read the
// table), and the next Add, the index's only writer, waits for it and puts
// it in place.
type ChainIndex struct {
	t *chainTable
}

// chainTable is a ChainIndex's memory: its table and the larger one being
// built beside reads, if any (growAhead). The index's cleanup frees both.
type chainTable struct {
	idtable.Table[chainEntry]
	next *growth
}

// growth is a larger copy of a chainTable's table, built on a goroutine of
// its own (ChainIndex.growAhead); t is the goroutine's until done closes.
type growth struct {
	done chan struct{}
	t    idtable.Table[chainEntry]
}

// chainEntry is what the index knows of an ID: the seq of the newest frame
// holding it and, when that frame's store was packed, 1 + the ordinal of the
// record there (0: ask the store).
type chainEntry struct{ seq, rec uint32 }

// NewChainIndex returns an empty index with room for ids IDs before it grows.
func NewChainIndex(ids int) *ChainIndex {
	x := &ChainIndex{t: &chainTable{Table: idtable.NewManual[chainEntry](ids, 2)}}
	runtime.AddCleanup(x, (*chainTable).free, x.t)
	return x
}

// Free releases the index's memory; x must not be used afterwards.
func (x *ChainIndex) Free() { x.t.free() }

// free releases t's memory, the larger table being built included (once it
// is built). A second free does nothing.
func (t *chainTable) free() {
	t.dropGrowth()
	t.Table.Free()
}

// growAheadAdds is how many Adds like the last ahead of need growAhead starts
// the larger table: enough that it is built when the Add that needs it
// comes (one Add ahead was not, at 1M accounts), few enough that the index
// is not much larger than it would be anyway (docs/benchmarks.md §9, "The
// first line's index grown ahead", on the trigger).
const growAheadAdds = 4

// growAhead starts building a table of twice the size on a goroutine of its
// own once the next growAheadAdds Adds might not fit x (as many IDs each as
// the last one added, added, would pass its load bound), unless one is being
// built already. The caller is x's writer (Add). The goroutine keeps x
// reachable, so its cleanup never runs beside it.
func (x *ChainIndex) growAhead(added int) {
	t := x.t
	if t.next != nil || t.Fits(t.Len()+growAheadAdds*added) {
		return
	}
	g := &growth{done: make(chan struct{})}
	t.next = g
	go func() {
		defer close(g.done)
		g.t = t.Grown(0)
		runtime.KeepAlive(x)
	}()
}

// adoptGrowth puts the table growAhead built in place of x's, waiting for it
// if need be. The caller is x's writer, and no read of x runs beside it (the
// trie holds its database's exclusive lock for an Add).
func (x *ChainIndex) adoptGrowth() {
	if g, ok := x.t.takeGrowth(); ok {
		x.t.Table.Free()
		x.t.Table = g
	}
}

// dropGrowth waits for the table growAhead is building, if any, and frees it.
func (t *chainTable) dropGrowth() {
	if g, ok := t.takeGrowth(); ok {
		g.Free()
	}
}

// takeGrowth waits for the table growAhead is building, if any, and hands it
// over: t holds no growth afterwards.
func (t *chainTable) takeGrowth() (idtable.Table[chainEntry], bool) {
	g := t.next
	if g == nil {
		return idtable.Table[chainEntry]{}, false
	}
	<-g.done
	t.next = nil
	return g.t, true
}

// Get returns the seq of the newest frame added that holds id.
func (x *ChainIndex) Get(id vertex.ID) (seq uint32, ok bool) {
	e, ok := x.t.Get(id)
	runtime.KeepAlive(x)
	return e.seq, ok
}

// Where is Get with where the frame at seq keeps id's record, for its
// store's LookupAt: 0 when that store must be asked with Lookup (it was not
// packed when added, or id is deleted there).
func (x *ChainIndex) Where(id vertex.ID) (seq, rec uint32, ok bool) {
	e, ok := x.t.Get(id)
	runtime.KeepAlive(x)
	return e.seq, e.rec, ok
}

// Len is the number of IDs in the index.
func (x *ChainIndex) Len() int { return x.t.Len() }

// Fits reports whether ids IDs fit the index without its growing.
func (x *ChainIndex) Fits(ids int) bool { return x.t.Fits(ids) }

// Slots is the size of the index's table: it holds up to half as many IDs.
func (x *ChainIndex) Slots() int { return x.t.Slots() }

// Add records every vertex s holds (its older IDs, deletions included, and
// its fresh vertices) as held by the frame at seq, which must be newer than
// every frame added before. For each ID of s's records that an older frame's
// packed record held until now, it calls superseded (when not nil) with that
// frame's seq and record (for its store's Supersede).
func Add[V any](x *ChainIndex, s *Store[V], seq uint32, superseded func(seq, rec uint32)) {
	defer runtime.KeepAlive(x)
	x.adoptGrowth()
	had := x.t.Len()
	x.t.Reserve(s.Len())
	if s.packed != nil {
		s.packed.eachID(s.first, func(id vertex.ID, rec uint32) {
			if was, ok := x.t.Swap(id, chainEntry{seq, rec}); ok && was.rec != 0 && superseded != nil {
				superseded(was.seq, was.rec)
			}
		})
	}
	for id := range s.old {
		x.t.Set(id, chainEntry{seq: seq})
	}
	for i, v := range s.fresh {
		if v != nil {
			x.t.Set(s.first+vertex.ID(i), chainEntry{seq: seq})
		}
	}
	x.growAhead(x.t.Len() - had)
}
