package reccache

import (
	"encoding/binary"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/hexstate/hexstate/internal/manual"
	"github.com/hexstate/hexstate/vertex"
)

// Cache holds the records of persisted vertices, encoded as the backend
// stores them (a branch with its hash key and, in the children's-keys variant,
// its children's keys); the caller decodes a record on every hit.
//
// Why records and not decoded vertices: a decoded vertex is a vertex.Vertex
// (with a vertex.Account for an account leaf) plus a buffer for its path, value
// and children's keys, while its record holds only the encoded fields: for an
// account leaf a tag, a hex-prefix path and the account's non-default fields in
// minimal form, with no hash (docs/format.md §4). The same budget therefore holds
// several times as many vertices, which on a state larger than the cache decides
// whether a block's paths are read from memory or from the backend; decoding a record
// needs no I/O, block search or decompression. And the cache holds no Go
// pointers: the garbage collector never scans it, however large it is.
//
// Each shard keeps its records in a ring of fixed-size chunks (as fastcache
// does): a record is appended at the ring's head, and when the head comes round
// to a chunk again, the entries still indexed there are dropped first. Eviction
// is therefore first in, first out, by the time an entry was appended: a hit does
// not refresh it, and neither does a new version of the same or smaller size,
// which put writes in place, in the old version's slot (only a larger one is
// appended, leaving the old one as garbage until the ring comes round). A
// persist refreshes every cached vertex it wrote (Refresh), so the cache never
// holds an outdated version of a persisted vertex. The chunks' memory is
// reserved once and kept: a persist never frees or re-grows the cache, and
// every entry it did not touch stays valid.
//
// Some records are worth more than their age says: the branches near the root
// of the account trie are on the paths of the accounts a block touches, yet
// in a state larger than the cache each one is needed too seldom for
// first-in-first-out to keep it (docs/design.md §7, "Pinned upper levels").
// PutPinned marks such a record: when the head comes
// round to its chunk, a pinned record still indexed there is moved to the
// chunk's start instead of dropped, and the head appends after it. A chunk
// keeps at most half its bytes that way (pinned records beyond that are
// dropped like the others, and must be pinned again by the next read), so
// pins take at most half the ring and every turn of the ring frees room.
// While the ring fills, a pinned put that would take its chunk past half
// starts the next chunk instead, so a cache filled with pins at once keeps
// them all when the ring comes round. A new version of a pinned record (Put,
// Refresh) stays pinned; a full round of the ring that freed no room in the
// index drops pinned records too.
//
// A pinned branch is kept without its children's keys (a persist's records
// and a hash's carry them, vertex.AppendWithoutChildKeys): they make a branch
// record ~10 times larger, and a persist rewriting the pinned levels' branches
// with them overflowed the pins' half of the ring, which dropped a tenth of
// them at once (docs/design.md §7, "Pinned upper levels").
type Cache struct {
	shards *[cacheShards]cacheShard // apart from the Cache: its memory's cleanup holds it
	hits   atomic.Uint64
	misses atomic.Uint64
}

// indexShare is the part of a cache's budget its index may grow to: an
// entry costs its record plus a 12-byte header in the ring, padded to 4
// bytes, and an 8-byte slot in an index at most three quarters full (~11
// bytes per entry). An eighth lets the index hold as many entries as the
// ring holds of the 40–60-byte records of a large state, and leaves the ring
// room for a 1M-account state's ~2.07M records (~100 bytes on average) in
// 256 MiB.
const indexShare = 8

const (
	cacheShards = 16
	cacheChunk  = 64 << 10 // bytes per ring chunk; an entry never straddles two
	entryHeader = 12       // ID (8 bytes, big-endian), slot and record length (2 bytes each); entries start 4-byte aligned
	minChunk    = 1 << 10  // below this a shard caches nothing

	// pinBit marks an index entry whose record is pinned (PutPinned); the
	// rest of the entry is the record's ring offset.
	pinBit = uint64(1) << 63
)

type cacheShard struct {
	mu       sync.RWMutex // Get shares it; Put, Refresh and eviction take it alone
	idx      index        // ring offset of the entry holding id's record, bounded
	chunks   [][]byte     // the ring; each chunk's length is its fill
	chunk    int          // bytes per chunk
	head     int          // the chunk the ring's head fills: the next entry goes at its end
	headPins int          // bytes of pinned entries in the head's chunk
	bytes    int          // bytes held in chunks (live entries and replaced ones)
	pinned   int          // index entries with pinBit
	// evicted counts the entries recycle dropped to make room.
	evicted uint64
}

// Stats reports a cache's use.
type Stats struct {
	Hits, Misses uint64
	Entries      int
	// Pinned is how many of the entries are pinned (PutPinned).
	Pinned int
	// Bytes is the record bytes the cache holds (including records that a
	// newer version replaced, until the ring overwrites them).
	Bytes int
	// Index is the bytes of the index from ID to ring offset: it grows with
	// the entries, up to its share of the budget.
	Index int
	// Budget is the configured bound on Bytes + Index.
	Budget int
	// Evicted is how many entries were dropped to make room for others (the
	// ring coming round, or the index full): zero while everything put
	// since New has fitted.
	Evicted uint64
}

// New returns a cache of at most budget bytes, its index included: the
// index may grow to an eighth of it, the ring of records takes the rest (at
// most 128 GiB: the index's offsets reach no further). When the index is
// full before the ring, the ring's oldest chunk is dropped to make room, as
// when the ring comes round. A budget too small for one chunk per shard
// caches nothing.
func New(budget int) *Cache {
	c := &Cache{shards: new([cacheShards]cacheShard)}
	per := budget / cacheShards
	for i := range c.shards {
		c.shards[i].idx = newIndex(per / indexShare / 8)
	}
	ringPer := min(max(0, per-c.shards[0].idx.MaxBytes()), maxShardRing)
	chunk := min(cacheChunk, ringPer) &^ 3
	n := 0
	if chunk >= minChunk {
		n = ringPer / chunk
	}
	ring := manual.New(cacheShards * n * chunk)
	mem := ring.Bytes()
	for i := range c.shards {
		chunks := make([][]byte, n)
		for j := range chunks {
			at := (i*n + j) * chunk
			chunks[j] = mem[at : at : at+chunk] // an entry never crosses a chunk: appends stay in it
		}
		c.shards[i].chunks, c.shards[i].chunk = chunks, chunk
	}
	// Nothing reads the ring or the indexes once the Cache is unreachable:
	// Get hands a record to its callback only for the call.
	runtime.AddCleanup(c, func(sh *[cacheShards]cacheShard) {
		ring.Free()
		for i := range sh {
			sh[i].idx.Free()
		}
	}, c.shards)
	return c
}

func (c *Cache) shard(id vertex.ID) *cacheShard {
	return &c.shards[(uint64(id)*0x9E3779B97F4A7C15)>>60]
}

// Get calls fn with the cached record of id and reports whether id is cached.
// rec is only valid during the call (it lives in the ring, under the shard's
// read lock): fn decodes or copies it. When fn fails the entry is dropped and
// the error returned: a cached record is checked exactly as a stored one is.
//
// Gets share the lock: a block's hashers and its reads hit the same shards
// all the time, and with an exclusive lock a holder descheduled by the OS
// (the machine's cores shared with RocksDB's threads) turned the mutex into
// its starvation mode, where every unlock hands the processor to the next
// waiter — half a second of scheduler delay over 20 blocks
// (docs/benchmarks.md §9).
func (c *Cache) Get(id vertex.ID, fn func(rec []byte) error) (bool, error) {
	s := c.shard(id)
	s.mu.RLock()
	off, ok := s.get(id)
	if !ok {
		s.mu.RUnlock()
		c.misses.Add(1)
		return false, nil
	}
	err := fn(s.record(off &^ pinBit))
	s.mu.RUnlock()
	c.hits.Add(1)
	if err != nil {
		s.mu.Lock()
		s.removeEntry(id, off) // unless a Put replaced it meanwhile
		s.mu.Unlock()
	}
	return true, err
}

// removeEntry drops id's index entry if it is the one at ring offset off (an
// entry replaced since stays).
func (s *cacheShard) removeEntry(id vertex.ID, off uint64) {
	if i := s.find(id); i >= 0 && s.idx.At(i)&^pinBit == off&^pinBit {
		s.unindex(i)
	}
}

// remove drops id's index entry, if it has one.
func (s *cacheShard) remove(id vertex.ID) {
	if i := s.find(id); i >= 0 {
		s.unindex(i)
	}
}

// unindex drops the index entry in slot i.
func (s *cacheShard) unindex(i int) {
	if s.idx.At(i)&pinBit != 0 {
		s.pinned--
	}
	s.idx.RemoveAt(i)
}

// record returns the record of the entry at ring offset off.
func (s *cacheShard) record(off uint64) []byte {
	ch := s.chunks[off/uint64(s.chunk)]
	at := int(off % uint64(s.chunk))
	n := int(binary.BigEndian.Uint16(ch[at+10:]))
	return ch[at+entryHeader : at+entryHeader+n]
}

// entrySize returns the ring bytes of an entry holding a record of size
// bytes: header, record and padding to the next 4-byte boundary (the index
// keeps offsets in 4-byte units).
func entrySize(size int) int { return (entryHeader + size + 3) &^ 3 }

// idAt returns the ID of the entry at ring offset off.
func (s *cacheShard) idAt(off uint64) vertex.ID {
	return vertex.ID(binary.BigEndian.Uint64(s.chunks[off/uint64(s.chunk)][off%uint64(s.chunk):]))
}

// find returns the index slot of id, or -1: the first slot of its probe
// whose tag matches and whose ring entry holds id.
func (s *cacheShard) find(id vertex.ID) int { return s.findTag(id, tagOf(id)) }

func (s *cacheShard) findTag(id vertex.ID, tag uint32) int {
	x := &s.idx
	for i := x.home(tag); x.slots[i] != 0; i = x.next(i) {
		if uint32(x.slots[i]>>32) == tag && s.idAt(x.At(i)&^pinBit) == id {
			return i
		}
	}
	return -1
}

// get returns id's ring offset, with pinBit when pinned.
func (s *cacheShard) get(id vertex.ID) (uint64, bool) {
	if i := s.find(id); i >= 0 {
		return s.idx.At(i), true
	}
	return 0, false
}

// swap makes off (a ring offset, with pinBit when pinned; the entry there
// holds id) id's index value and returns the one before it, if any. The
// caller keeps the index below its Max for a new ID.
func (s *cacheShard) swap(id vertex.ID, off uint64) (was uint64, had bool) {
	tag := tagOf(id)
	if i := s.findTag(id, tag); i >= 0 {
		was = s.idx.At(i)
		s.idx.setAt(i, off)
		return was, true
	}
	s.idx.insert(tag, off)
	return 0, false
}

// slot returns the record space of the entry at ring offset off.
func (s *cacheShard) slot(off uint64) []byte {
	ch := s.chunks[off/uint64(s.chunk)]
	at := int(off % uint64(s.chunk))
	n := int(binary.BigEndian.Uint16(ch[at+8:]))
	return ch[at : at+entryHeader+n]
}

// Contains reports whether id is cached, without counting a hit or a miss.
func (c *Cache) Contains(id vertex.ID) bool {
	s := c.shard(id)
	s.mu.RLock()
	ok := s.find(id) >= 0
	s.mu.RUnlock()
	runtime.KeepAlive(c) // its cleanup frees what s points into
	return ok
}

// Put caches rec as the persisted record of id, replacing an older one (and
// pinned if that one was). rec is copied. A record larger than half a chunk is
// not cached (and an older one dropped).
func (c *Cache) Put(id vertex.ID, rec []byte) {
	c.putOne(id, rec, false, false)
}

// PutPinned is Put, and pins the record: it stays when the ring comes round,
// as long as its chunk's pinned records fit in half the chunk (see Cache).
func (c *Cache) PutPinned(id vertex.ID, rec []byte) {
	c.putOne(id, rec, true, false)
}

// PutAbsent is Put (PutPinned with pin) unless id is cached already, whose
// version may be newer or carry keys rec lacks: a record just read from the
// store, cached under one lock of the shard where Contains then Put took it
// twice.
func (c *Cache) PutAbsent(id vertex.ID, rec []byte, pin bool) {
	c.putOne(id, rec, pin, true)
}

// putOne caches rec as id's record, under one lock of its shard; with
// ifAbsent, only when id is not cached.
func (c *Cache) putOne(id vertex.ID, rec []byte, pin, ifAbsent bool) {
	s := c.shard(id)
	s.mu.Lock()
	if !ifAbsent || s.find(id) < 0 {
		s.put(id, rec, pin, true)
	}
	s.mu.Unlock()
	runtime.KeepAlive(c) // its cleanup frees what s points into
}

// Refresh replaces the cached version of each record of recs whose ID is
// cached (as Put does, keeping a pin) and removes each ID of deleted. A
// record whose ID is not cached is added only where the ring has room that
// no cached record holds (a cache still filling); it never evicts one. A
// persist hands the cache every vertex it wrote — at 10M accounts, 64
// blocks rewrite ~1M vertices, more than the ring holds — and caching them
// all evicted the records the next blocks read, for vertices on paths those
// blocks mostly do not take again (docs/design.md §7, "Kept across
// persists"). Refreshing is what keeps the cache from holding an outdated
// version of a persisted vertex; a vertex it skipped is read from the store
// the first time a block needs it.
//
// It takes each shard's lock once per call rather than once per record: a
// lock taken and released per record handed the shard back and forth with
// the block reading through the cache meanwhile (every reader that found the
// lock taken parked and was woken again). Callers pass a few thousand at a
// time, so that a shard is held for a fraction of a millisecond.
func (c *Cache) Refresh(recs []vertex.Record, deleted []vertex.ID) {
	for i := range c.shards {
		s := &c.shards[i]
		locked := false
		for _, r := range recs {
			if c.shard(r.ID) == s {
				if !locked {
					s.mu.Lock()
					locked = true
				}
				s.put(r.ID, r.Rec, false, false)
			}
		}
		for _, id := range deleted {
			if c.shard(id) == s {
				if !locked {
					s.mu.Lock()
					locked = true
				}
				s.remove(id)
			}
		}
		if locked {
			s.mu.Unlock()
		}
	}
	runtime.KeepAlive(c)
}

// filling reports whether the ring has not come round yet: the chunk after
// the head has never been written.
func (s *cacheShard) filling() bool {
	return len(s.chunks[(s.head+1)%len(s.chunks)]) == 0
}

// hasRoom reports whether an entry of n bytes can be added without evicting
// a cached one: the index is not full and the entry fits at the end of the
// head's chunk, or the ring is still filling.
func (s *cacheShard) hasRoom(n int) bool {
	return s.idx.Len() < s.idx.Max() && (len(s.chunks[s.head])+n <= s.chunk || s.filling())
}

// put is Put (pin false) or PutPinned with the shard's lock held; with
// mayEvict false (Refresh) a record whose ID is not cached is added only if
// that evicts nothing.
func (s *cacheShard) put(id vertex.ID, rec []byte, pin, mayEvict bool) {
	if len(s.chunks) == 0 {
		return
	}
	old, had := s.get(id)
	if !had && !mayEvict && !s.hasRoom(entrySize(len(rec))) {
		return
	}
	mark, size := uint64(0), len(rec)
	if pin || old&pinBit != 0 {
		mark = pinBit
		size -= vertex.ChildKeysSize(rec) // kept without its children's keys (see Cache)
	}
	n := entryHeader + size
	room := entrySize(size)
	if 2*room > s.chunk {
		s.remove(id)
		return
	}
	if had {
		// A new version of a cached vertex (a persist rewriting it, or its
		// keys found by hashing) usually has the same size: overwrite it in
		// its slot rather than leave the old one as garbage in the ring.
		if e := s.slot(old &^ pinBit); len(e) >= n {
			binary.BigEndian.PutUint16(e[10:], uint16(size))
			appendRecord(e[:entryHeader], rec, mark)
			if old|mark != old {
				s.swap(id, old|mark)
				s.pinned++
			}
			return
		}
	} else {
		// Make room in the index: the oldest chunks first, keeping their
		// pinned records for one round of the ring, then without them. It
		// ends: once every chunk is empty, so is the index.
		for i := 0; s.idx.Len() >= s.idx.Max(); i++ {
			s.advance(i < len(s.chunks))
		}
	}
	if mark != 0 && 2*(s.headPins+room) > s.chunk && s.filling() {
		// The head's chunk would be over half pinned, and the ring has not
		// come round: start the next chunk, so that a cache filled with
		// pins at once (Frame.PrefetchUpperLevels after a restart) holds at
		// most half a chunk of them in each, all of which recycle keeps.
		// Packed, the first round of the ring dropped half of them.
		s.advance(false)
	}
	for i := 0; len(s.chunks[s.head])+room > s.chunk; i++ {
		s.advance(i == 0) // does not fit: the next chunk (which it fits, pins or not)
	}
	ch := s.chunks[s.head]
	off := uint64(s.head)*uint64(s.chunk) + uint64(len(ch))
	ch = binary.BigEndian.AppendUint64(ch, uint64(id))
	ch = binary.BigEndian.AppendUint16(ch, uint16(room-entryHeader))
	ch = binary.BigEndian.AppendUint16(ch, uint16(size))
	ch = appendRecord(ch, rec, mark)
	s.chunks[s.head] = ch[:len(ch)+room-n] // the padding: the next entry starts aligned
	if mark != 0 {
		s.headPins += room
	}
	// The old version's entry, if still there (the advances above may
	// have recycled it), is replaced.
	if was, had := s.swap(id, off|mark); mark != 0 && (!had || was&pinBit == 0) {
		s.pinned++
	}
	s.bytes += room
}

// appendRecord appends rec to dst (in the ring, with room for it), without
// its children's keys when mark pins it.
func appendRecord(dst, rec []byte, mark uint64) []byte {
	if mark != 0 {
		return vertex.AppendWithoutChildKeys(dst, rec)
	}
	return append(dst, rec...)
}

// advance moves the head to the start of the next chunk of the ring (the
// oldest, once the ring has come round) and empties it, keeping its pinned
// records when keepPins is set: the next entry goes after them. What it keeps
// fits in half the chunk, so an entry a put makes always fits after it.
func (s *cacheShard) advance(keepPins bool) {
	s.head = (s.head + 1) % len(s.chunks)
	s.headPins = s.recycle(s.head, keepPins)
}

// eachLive calls fn for each entry of chunk ci that is still indexed there,
// with its index slot and its bytes (header and record).
func (s *cacheShard) eachLive(ci int, fn func(id vertex.ID, slot int, e []byte)) {
	ch := s.chunks[ci]
	base := uint64(ci) * uint64(s.chunk)
	for at := 0; at < len(ch); {
		id := vertex.ID(binary.BigEndian.Uint64(ch[at:]))
		n := entryHeader + int(binary.BigEndian.Uint16(ch[at+8:]))
		if i := s.find(id); i >= 0 && s.idx.At(i)&^pinBit == base+uint64(at) {
			fn(id, i, ch[at:at+n])
		}
		at += n
	}
}

// recycle empties chunk ci before the ring's head writes into it again,
// dropping the index entries that still point into it; with keepPins its
// pinned records are moved to its start instead, up to half the chunk. It
// returns the bytes kept.
func (s *cacheShard) recycle(ci int, keepPins bool) int {
	ch := s.chunks[ci]
	base := uint64(ci) * uint64(s.chunk)
	kept := 0
	s.eachLive(ci, func(id vertex.ID, i int, e []byte) {
		if keepPins && s.idx.At(i)&pinBit != 0 && 2*(kept+len(e)) <= s.chunk {
			copy(ch[kept:], e)                         // forward within the chunk: kept never passes e
			s.idx.setAt(i, (base+uint64(kept))|pinBit) // by slot: the copy may have overwritten the ID at its old offset
			kept += len(e)
			return
		}
		s.unindex(i)
		s.evicted++
	})
	s.bytes -= len(ch) - kept
	s.chunks[ci] = ch[:kept]
	return kept
}

// Stats reports the cache's counters and size.
func (c *Cache) Stats() Stats {
	st := Stats{Hits: c.hits.Load(), Misses: c.misses.Load()}
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		st.Entries += s.idx.Len()
		st.Pinned += s.pinned
		st.Bytes += s.bytes
		st.Evicted += s.evicted
		if len(s.chunks) > 0 {
			st.Index += s.idx.Bytes()
			st.Budget += len(s.chunks)*s.chunk + s.idx.MaxBytes()
		}
		s.mu.Unlock()
	}
	runtime.KeepAlive(c)
	return st
}
