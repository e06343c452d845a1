package trie

import (
	"fmt"
	"testing"
	"time"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/vertex"
	"github.com/holiman/uint256"
)

// White-box tests of frames: how many vertices a frame holds, which records a
// persist leaves in the backend, and whether the parallel hashing path runs.

func fiAddr(i int) hashkey.Hash { return hashkey.Keccak256([]byte(fmt.Sprintf("account-%d", i))) }
func fiSlot(i int) hashkey.Hash { return hashkey.Keccak256([]byte(fmt.Sprintf("slot-%d", i))) }

func fiAcc(n uint64) Account {
	a := Account{Nonce: n}
	a.Balance.SetUint64(n * 3)
	return a
}

func fiOpen(t *testing.T, f vertex.Format, workers int) *DB {
	t.Helper()
	return fiOpenWith(t, &Options{Format: f, Workers: workers})
}

// fiOpenWith opens a database over a memory backend with opts, closed when
// the test ends.
func fiOpenWith(t *testing.T, opts *Options) *DB {
	t.Helper()
	db, err := Open(NewMemoryBackend(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func fiMust(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// fiDepth is the number of vertices on the path from root to the payload at key
// (or to where the path leaves the trie), as fr sees them.
func fiDepth(t *testing.T, fr *Frame, root vertex.ID, key hashkey.Hash) int {
	t.Helper()
	path := hashkey.AppendNibbles(nil, key[:])
	d := 0
	for id := root; id != vertex.NoID; {
		v, err := fr.get(id)
		fiMust(t, err)
		if v == nil {
			break
		}
		d++
		if v.Kind == vertex.Leaf || len(path) <= len(v.Path) || hashkey.CommonPrefix(v.Path, path) != len(v.Path) {
			break
		}
		path = path[len(v.Path):]
		id, path = v.Child(int(path[0])), path[1:]
	}
	return d
}

// TestFrameMemoryProportional: a frame holds only the vertices on the paths it
// changed, not a copy of the state: one change on a 10,000-account base is
// O(depth) vertices, before and after hashing.
func TestFrameMemoryProportional(t *testing.T) {
	for _, f := range []vertex.Format{vertex.FormatV1, vertex.FormatV2} {
		t.Run(f.String(), func(t *testing.T) {
			db := fiOpen(t, f, 0)
			const n = 10000
			g := db.Begin()
			for i := 0; i < n; i++ {
				fiMust(t, g.UpdateAccount(fiAddr(i), fiAcc(uint64(i))))
			}
			for s := 0; s < 500; s++ {
				fiMust(t, g.UpdateStorage(fiAddr(7), fiSlot(s), uint256.NewInt(uint64(s+1))))
			}
			fiMust(t, db.Persist(g, 1))

			// One account update: exactly the vertices on its path.
			fr := db.Begin()
			d := fiDepth(t, fr, vertex.RootID, fiAddr(5))
			if d < 3 || d > 8 {
				t.Fatalf("depth of an account in a %d-account trie = %d", n, d)
			}
			fiMust(t, fr.UpdateAccount(fiAddr(5), fiAcc(99)))
			if got := fiFrameLen(fr); got != d {
				t.Fatalf("frame with one account update holds %d vertices, want %d (the path)", got, d)
			}
			_, err := fr.StateRoot()
			fiMust(t, err)
			if got := fiFrameLen(fr); got != d {
				t.Fatalf("after hashing, the frame holds %d vertices, want %d", got, d)
			}

			// One storage write: the account's path plus the slot's path.
			fr = db.Begin()
			sd := fiDepth(t, fr, vertex.RootID, fiAddr(7))
			a, err := fr.findAccount(fiAddr(7))
			fiMust(t, err)
			sd += fiDepth(t, fr, a.Acc.Storage, fiSlot(3))
			fiMust(t, fr.UpdateStorage(fiAddr(7), fiSlot(3), uint256.NewInt(12345)))
			_, err = fr.StateRoot()
			fiMust(t, err)
			if got := fiFrameLen(fr); got != sd {
				t.Fatalf("frame with one storage write holds %d vertices, want %d", got, sd)
			}

			// A new account: its parent's path plus at most a new branch and leaf.
			fr = db.Begin()
			fiMust(t, fr.UpdateAccount(fiAddr(n+1), fiAcc(1)))
			_, err = fr.StateRoot()
			fiMust(t, err)
			if got := fiFrameLen(fr); got > 8+2 {
				t.Fatalf("frame with one new account holds %d vertices", got)
			}

			// 100 updates: at most 100 paths (shared near the root).
			fr = db.Begin()
			for i := 0; i < 100; i++ {
				fiMust(t, fr.UpdateAccount(fiAddr(i*97), fiAcc(uint64(i))))
			}
			_, err = fr.StateRoot()
			fiMust(t, err)
			if got := fiFrameLen(fr); got > 100*d || got < 100 {
				t.Fatalf("frame with 100 updates holds %d vertices (depth %d)", got, d)
			}

			// A child of that hashed frame, with one change, holds one path too.
			child := fr.Begin()
			fiMust(t, child.UpdateAccount(fiAddr(5), fiAcc(7)))
			_, err = child.StateRoot()
			fiMust(t, err)
			if got := fiFrameLen(child); got != d {
				t.Fatalf("child frame with one change holds %d vertices, want %d", got, d)
			}

			// A child of an unhashed parent computes the parent's keys: it clones
			// the parent's dirty vertices to hold them. Reported, not asserted.
			p := db.Begin()
			for i := 0; i < 100; i++ {
				fiMust(t, p.UpdateAccount(fiAddr(i*89), fiAcc(uint64(i))))
			}
			c := p.Begin()
			fiMust(t, c.UpdateAccount(fiAddr(5), fiAcc(8)))
			_, err = c.StateRoot()
			fiMust(t, err)
			t.Logf("child (1 change) of an unhashed parent (100 changes, %d vertices) holds %d vertices after hashing", fiFrameLen(p), fiFrameLen(c))
		})
	}
}

// fiFrameLen is the number of vertices frame fr holds (its changes).
func fiFrameLen(fr *Frame) int { return fr.vtx.Len() }

// fiFinishPacks puts in place the packs and repacks Begin left in flight, as
// the next Begin would.
func fiFinishPacks(db *DB) {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.finishPacks()
}

// fiRecords is the number of vertex records in a memory backend.
func fiRecords(db *DB) int {
	m := db.backend.(*memoryBackend)
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.recs)
}

// TestPersistDeletesStorageRecords: persisting the deletion of an account
// removes its storage trie's records from the backend: the store then holds as
// many records as a fresh store built with the remaining state.
func TestPersistDeletesStorageRecords(t *testing.T) {
	for _, f := range []vertex.Format{vertex.FormatV1, vertex.FormatV2} {
		t.Run(f.String(), func(t *testing.T) {
			build := func(withStorage bool) *DB {
				db := fiOpen(t, f, 0)
				fr := db.Begin()
				for i := 0; i < 100; i++ {
					fiMust(t, fr.UpdateAccount(fiAddr(i), fiAcc(uint64(i))))
				}
				for s := 0; s < 20; s++ {
					fiMust(t, fr.UpdateStorage(fiAddr(1), fiSlot(s), uint256.NewInt(uint64(s+1))))
				}
				if withStorage {
					for s := 0; s < 300; s++ {
						fiMust(t, fr.UpdateStorage(fiAddr(2), fiSlot(s), uint256.NewInt(uint64(s+1))))
					}
				}
				fiMust(t, db.Persist(fr, 1))
				fiMust(t, db.Flush()) // the test reads the backend
				return db
			}
			db, ref := build(true), build(false)
			before := fiRecords(db)
			fr := db.Begin()
			fiMust(t, fr.DeleteAccount(fiAddr(2)))
			fiMust(t, fr.UpdateAccount(fiAddr(2), fiAcc(2)))
			fiMust(t, db.Persist(fr, 2))
			fiMust(t, db.Flush())
			after, want := fiRecords(db), fiRecords(ref)
			if after != want {
				t.Fatalf("after deleting an account with 300 slots: %d records (were %d), a fresh store of the same state has %d", after, before, want)
			}
			r1, _ := db.StateRoot()
			r2, _ := ref.StateRoot()
			if r1 != r2 {
				t.Fatalf("roots differ: %v vs %v", r1, r2)
			}
		})
	}
}

// TestParallelPathTaken: with Workers > 1 and at least parallelMin writes, the
// sub-tries under the root are hashed by hashChildrenParallel (their keys are
// set, the root's is not yet), and the root then matches the serial one.
func TestParallelPathTaken(t *testing.T) {
	for _, f := range []vertex.Format{vertex.FormatV1, vertex.FormatV2} {
		t.Run(f.String(), func(t *testing.T) {
			par, ser := fiOpen(t, f, 4), fiOpen(t, f, 1)
			ptx, stx := par.Begin(), ser.Begin()
			for _, fr := range []*Frame{ptx, stx} {
				for i := 0; i < 2*parallelMin; i++ {
					fiMust(t, fr.UpdateAccount(fiAddr(i), fiAcc(uint64(i))))
					if i%10 == 0 {
						fiMust(t, fr.UpdateStorage(fiAddr(i), fiSlot(i), uint256.NewInt(uint64(i+1))))
					}
				}
			}
			if ptx.writes < parallelMin {
				t.Fatalf("writes = %d < parallelMin", ptx.writes)
			}
			fiMust(t, ptx.hashChildrenParallel(vertex.RootID, 4))
			root, err := ptx.get(vertex.RootID)
			fiMust(t, err)
			if !root.Key.IsVoid() {
				t.Fatal("the root's key was set by the parallel pass")
			}
			for n := 0; n < 16; n++ {
				if c := root.Child(n); c != vertex.NoID {
					v, err := ptx.get(c)
					fiMust(t, err)
					if v.Key.IsVoid() {
						t.Fatalf("child %d of the root has no key after the parallel pass", n)
					}
				}
			}
			pr, err := ptx.StateRoot()
			fiMust(t, err)
			sr, err := stx.StateRoot()
			fiMust(t, err)
			if pr != sr {
				t.Fatalf("parallel root %v, serial %v", pr, sr)
			}
			if ptx.writes != 0 {
				t.Fatalf("writes = %d after hashing, want 0", ptx.writes)
			}
		})
	}
}

// TestChainIndexBuiltOnce checks that a chain of frames shares one index of
// the frames below, each frame added once (a rebuild walks every frame's
// changes inside one block's Begin); that after a persist the next chain's
// index starts at a fraction of the last one's size (nextChainIDs) and ends
// no larger; that a fork off an older frame gets an index of its own line;
// and that a short chain after the long ones gets a small index again.
func TestChainIndexBuiltOnce(t *testing.T) {
	db := fiOpen(t, vertex.FormatV2, 0)
	g := db.Begin()
	for i := 0; i < 5000; i++ {
		fiMust(t, g.UpdateAccount(fiAddr(i), fiAcc(uint64(i))))
	}
	fiMust(t, db.Persist(g, 1))
	var first, last int // the index's slots after the chain's first frame, and at its end
	chain := func(block uint64, frames int) []*Frame {
		fr := db.Begin()
		var c *frameChain
		var line []*Frame
		for b := 0; b < frames; b++ {
			for i := 0; i < 200; i++ {
				fiMust(t, fr.UpdateAccount(fiAddr((b*200+i*7)%5000), fiAcc(block+uint64(b))))
			}
			_, err := fr.StateRoot()
			fiMust(t, err)
			line = append(line, fr)
			fr = fr.Begin()
			switch {
			case fr.below.chain == nil:
				t.Fatal("a frame on a frame above the base has no index of the frames below")
			case b == 0:
				c, first = fr.below.chain, fr.below.chain.index.Slots()
			case fr.below.chain != c:
				t.Fatalf("frame %d of the chain built a new index (want the one of frame 1)", b+1)
			}
		}
		if len(c.frames) != frames {
			t.Fatalf("index of %d frames, want %d", len(c.frames), frames)
		}
		last = c.index.Slots()
		return append(line, fr)
	}
	chain(2, 80) // the first chain has no earlier one to size it
	long := last
	line := chain(100, 80)
	if first > long/2 || last > long {
		t.Fatalf("a chain like the last one: an index of %d slots at its first frame and %d at its end, want at most %d and %d", first, last, long/2, long)
	}
	fork := line[40].Begin()
	if fork.below.chain == line[41].below.chain {
		t.Fatal("a fork off frame 41 shares the index of the line above it")
	}
	if got := len(fork.below.chain.frames); got != 41 {
		t.Fatalf("the fork's index holds %d frames, want the 41 below it", got)
	}
	if fork2 := line[40].Begin(); fork2.below.chain != fork.below.chain {
		t.Fatal("a second fork off frame 41 indexed the chain again")
	}
	fiMust(t, db.Persist(line[80], 190))

	// A chain of a few small frames after the long ones: the next chain's
	// index follows it, not the longest chain seen.
	long = db.lastChainIDs
	small := chain(300, 3)
	fiMust(t, db.Persist(small[3], 310))
	fr := db.Begin()
	fiMust(t, fr.UpdateAccount(fiAddr(1), fiAcc(8)))
	_, err := fr.StateRoot()
	fiMust(t, err)
	fr = fr.Begin()
	if slots := fr.below.chain.index.Slots(); slots > 2*long {
		t.Fatalf("after a chain of 3 small frames, an index of %d slots (a chain of %d IDs came before it)", slots, long)
	}
}

// TestChainIndexPrepared: a persist has the next line's index made ahead
// (framestore.ChainPool.Prepare), sized from the last line's, and the line
// begun after it takes that index instead of making one in its Begin.
func TestChainIndexPrepared(t *testing.T) {
	db := fiOpen(t, vertex.FormatV2, 0)
	fr := db.Begin()
	for b := 0; b < 20; b++ {
		for i := 0; i < 300; i++ {
			fiMust(t, fr.UpdateAccount(fiAddr(b*300+i), fiAcc(uint64(b))))
		}
		_, err := fr.StateRoot()
		fiMust(t, err)
		fr = fr.Begin()
	}
	fiMust(t, db.Persist(fr, 1))
	want := db.nextChainIDs()
	deadline := time.Now().Add(10 * time.Second)
	for db.chains.Spares() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no index was prepared within 10 s of a persist")
		}
		time.Sleep(time.Millisecond)
	}
	spares := db.chains.Spares()
	child := fr.Begin() // on the base: no frames below to index
	fiMust(t, child.UpdateAccount(fiAddr(1), fiAcc(99)))
	_, err := child.StateRoot()
	fiMust(t, err)
	grand := child.Begin()
	if db.chains.Spares() != spares-1 {
		t.Fatalf("the new line's Begin left %d spares of %d: it made its index instead of taking the prepared one", db.chains.Spares(), spares)
	}
	if got := grand.below.chain.index; !got.Fits(want) {
		t.Fatalf("the new line's index has %d slots, not room for the %d IDs the last line's size asks for", got.Slots(), want)
	}
}

// TestChainIndexLaggingPersist follows a client that keeps 8 frames
// unpersisted and persists the oldest after every block: the line's index is
// built anew once its persisted frames outnumber the live ones (so it stays
// within about twice the live frames), and the lowest fresh ID a read must
// walk for rises with the base at each rebuild instead of staying at the
// first frame's.
func TestChainIndexLaggingPersist(t *testing.T) {
	db := fiOpen(t, vertex.FormatV2, 0)
	fr := db.Begin()
	var line []*Frame
	var firsts []vertex.ID // each frame's first fresh ID (a persist empties its store)
	for b := 0; b < 60; b++ {
		for i := 0; i < 50; i++ {
			fiMust(t, fr.UpdateAccount(fiAddr(b*50+i), fiAcc(uint64(b))))
		}
		_, err := fr.StateRoot()
		fiMust(t, err)
		line = append(line, fr)
		firsts = append(firsts, fr.vtx.First())
		if b >= 8 {
			fiMust(t, db.Persist(line[b-8], uint64(b-7)))
		}
		fr = fr.Begin()
		if c := fr.below.chain; c != nil && len(c.frames) > 2*9+1 {
			t.Fatalf("block %d: the index holds %d frames for 9 live ones", b, len(c.frames))
		}
	}
	// Since the last rebuild (at most twice the live frames ago).
	if low := firsts[len(line)-2*9]; fr.below.first < low {
		t.Fatalf("reads walk for fresh IDs from %d, below the first of frame %d of %d (%d)", fr.below.first, len(line)-2*9, len(line), low)
	}
	if err := fr.UpdateAccount(fiAddr(1), fiAcc(99)); err != nil {
		t.Fatal(err)
	}
	if _, err := fr.StateRoot(); err != nil {
		t.Fatal(err)
	}
}

// TestSealedFramesPacked: Begin packs the sealed parent (its vertices become
// records, its slabs are dropped); the parent keeps reading as before, a
// child's writes over the same accounts leave it unchanged (a vertex decoded
// from its records is the child's to own, never the parent's), and a
// persist of the chain writes the packed frames' records so that a reopened
// store holds the child's state.
func TestSealedFramesPacked(t *testing.T) {
	for _, format := range []vertex.Format{vertex.FormatV1, vertex.FormatV2} {
		db := fiOpen(t, format, 0)
		a := db.Begin()
		for i := 0; i < 500; i++ {
			fiMust(t, a.UpdateAccount(fiAddr(i), fiAcc(1)))
		}
		rootA, err := a.StateRoot()
		fiMust(t, err)
		b := a.Begin()
		fiFinishPacks(db)
		if !a.vtx.Packed() || a.slab != nil || a.arena != nil {
			t.Fatalf("%v: the sealed parent is not packed (packed %v, slab %d left)", format, a.vtx.Packed(), len(a.slab))
		}
		if b.vtx.Packed() {
			t.Fatalf("%v: the open child is packed", format)
		}
		for i := 0; i < 500; i += 2 {
			fiMust(t, b.UpdateAccount(fiAddr(i), fiAcc(2)))
		}
		rootB, err := b.StateRoot()
		fiMust(t, err)
		if got, err := a.StateRoot(); err != nil || got != rootA {
			t.Fatalf("%v: the packed parent's root is %x (%v) after the child's writes, want %x", format, got, err, rootA)
		}
		for i := 0; i < 500; i++ {
			acc, _, err := a.Account(fiAddr(i))
			fiMust(t, err)
			if acc.Nonce != 1 {
				t.Fatalf("%v: account %d reads nonce %d in the packed parent, want 1", format, i, acc.Nonce)
			}
		}
		c := b.Begin()
		fiMust(t, db.Persist(c, 1))
		fiMust(t, db.Flush())
		if got, _ := db.StateRoot(); got != rootB {
			t.Fatalf("%v: persisted root %x, want %x", format, got, rootB)
		}
		fiMust(t, c.Check())
	}
}

// TestSupersededKeysStripped: once a later frame of the line holds newer
// versions of most of a sealed frame's branches, that frame is repacked
// without their children's keys (its root record keeps its own key, not its
// children's), and it still answers as before: the same root and proofs,
// byte for byte, as a frame that kept every key, and a fork begun on it
// reaches the same root as the same fork on that frame.
func TestSupersededKeysStripped(t *testing.T) {
	for _, format := range []vertex.Format{vertex.FormatV1, vertex.FormatV2} {
		db, ref := fiOpen(t, format, 0), fiOpen(t, format, 0)
		a, refA := db.Begin(), ref.Begin()
		for i := 0; i < 500; i++ {
			fiMust(t, a.UpdateAccount(fiAddr(i), fiAcc(1)))
			fiMust(t, refA.UpdateAccount(fiAddr(i), fiAcc(1)))
		}
		rootA, err := a.StateRoot()
		fiMust(t, err)
		var want [][][]byte
		for i := 0; i < 500; i += 50 {
			p, err := refA.AccountProof(fiAddr(i))
			fiMust(t, err)
			want = append(want, p)
		}
		b := a.Begin()
		fiFinishPacks(db)
		if r, _ := a.vtx.Lookup(vertex.RootID); r == nil || r.ChildKeys == nil {
			t.Fatalf("%v: the sealed frame's root lacks its children's keys before anything supersedes it", format)
		}
		for i := 0; i < 500; i++ {
			fiMust(t, b.UpdateAccount(fiAddr(i), fiAcc(2)))
		}
		_, err = b.StateRoot()
		fiMust(t, err)
		b.Begin() // indexes b: every branch of a is superseded
		fiFinishPacks(db)
		if r, _ := a.vtx.Lookup(vertex.RootID); r == nil || r.ChildKeys != nil || !r.Key.IsHash() {
			t.Fatalf("%v: the superseded root record is not stripped to its own key: %+v", format, r)
		}
		if got, err := a.StateRoot(); err != nil || got != rootA {
			t.Fatalf("%v: the stripped frame's root is %x (%v), want %x", format, got, err, rootA)
		}
		for k, i := 0, 0; i < 500; k, i = k+1, i+50 {
			p, err := a.AccountProof(fiAddr(i))
			fiMust(t, err)
			if fmt.Sprint(p) != fmt.Sprint(want[k]) {
				t.Fatalf("%v: the stripped frame's proof of account %d differs from the unstripped frame's", format, i)
			}
		}
		fork, refFork := a.Begin(), refA.Begin()
		for i := 0; i < 500; i += 3 {
			fiMust(t, fork.UpdateAccount(fiAddr(i), fiAcc(3)))
			fiMust(t, refFork.UpdateAccount(fiAddr(i), fiAcc(3)))
		}
		got, err := fork.StateRoot()
		fiMust(t, err)
		if w, err := refFork.StateRoot(); err != nil || got != w {
			t.Fatalf("%v: a fork on the stripped frame reaches %x, the same fork on the unstripped one %x (%v)", format, got, w, err)
		}
	}
}

// TestPacksBesideReads: while the frames of a line are packed and repacked
// on goroutines beside the next blocks, other goroutines keep reading every
// sealed frame (accounts and proofs); each read answers that frame's state,
// before and after the next Begin puts the records in place. Run with -race,
// it checks that the goroutines only read what nothing else writes.
func TestPacksBesideReads(t *testing.T) {
	db := fiOpen(t, vertex.FormatV2, 0)
	fr := db.Begin()
	var sealed []*Frame
	for blk := 1; blk <= 12; blk++ {
		for i := 0; i < 300; i++ {
			if i%3 == blk%3 || blk == 1 {
				fiMust(t, fr.UpdateAccount(fiAddr(i), fiAcc(uint64(blk))))
			}
		}
		_, err := fr.StateRoot()
		fiMust(t, err)
		sealed = append(sealed, fr)
		fr = fr.Begin()
		if sealed[len(sealed)-1].vtx.Packed() {
			t.Fatalf("block %d: its frame was packed inside Begin, not beside the next block", blk)
		}
		done := make(chan error, 2)
		for g := 0; g < 2; g++ {
			go func() {
				for k, s := range sealed {
					for i := g; i < 300; i += 7 {
						acc, _, err := s.Account(fiAddr(i))
						if err != nil {
							done <- err
							return
						}
						want := uint64(1) // the newest block up to k+1 that wrote account i
						for b := k + 1; b > 1; b-- {
							if i%3 == b%3 {
								want = uint64(b)
								break
							}
						}
						if acc.Nonce != want {
							done <- fmt.Errorf("frame of block %d: account %d has nonce %d, want %d", k+1, i, acc.Nonce, want)
							return
						}
						if _, err := s.AccountProof(fiAddr(i)); err != nil {
							done <- err
							return
						}
					}
				}
				done <- nil
			}()
		}
		for i := 0; i < 300; i += 5 { // the next block's writes, beside the reads
			fiMust(t, fr.UpdateAccount(fiAddr(i), fiAcc(100)))
		}
		fr.Rollback()
		fr = sealed[len(sealed)-1].Begin()
		for g := 0; g < 2; g++ {
			fiMust(t, <-done)
		}
	}
	if r, _ := sealed[0].vtx.Lookup(vertex.RootID); r == nil || r.ChildKeys != nil {
		t.Fatal("the first frame's superseded root record was never stripped")
	}
}
