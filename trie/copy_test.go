package trie_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/holiman/uint256"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/internal/trietest"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

func other(f vertex.Format) vertex.Format {
	if f == vertex.FormatV1 {
		return vertex.FormatV2
	}
	return vertex.FormatV1
}

func newMem(t *testing.T, f vertex.Format, noChild bool) *trie.DB {
	t.Helper()
	db, err := trie.Open(trie.NewMemoryBackend(), &trie.Options{Format: f, Records: trietest.RecordsOf(noChild)})
	trietest.Must(t, err, "Open")
	return db
}

// loaded is a database of format f holding accts, built by the StateLoader.
func loaded(t *testing.T, f vertex.Format, accts []trie.AccountLeaf, noChild bool) (*trie.DB, trie.Backend) {
	t.Helper()
	b := trie.NewMemoryBackend()
	db, err := trie.Open(b, &trie.Options{Format: f, Records: trietest.RecordsOf(noChild)})
	trietest.Must(t, err, "Open")
	trietest.LoadState(t, db, accts, 9)
	return db, b
}

// TestCopyIsTheBuildersStore copies builder-made stores into the other
// format and finds the records the builder makes in that format.
func TestCopyIsTheBuildersStore(t *testing.T) {
	accts := trietest.StateAccounts(3000, 1)
	for _, f := range trietest.Formats {
		t.Run(f.String(), func(t *testing.T) {
			src, _ := loaded(t, f, accts, false)
			_, want := loaded(t, other(f), accts, false)
			b := trie.NewMemoryBackend()
			dst, err := trie.Open(b, &trie.Options{Format: other(f), Records: vertex.ChildKeyCopies})
			trietest.Must(t, err, "Open")
			var final trie.CopyProgress
			root, err := dst.CopyFrom(context.Background(), src, trie.CopyOptions{Block: src.Block(),
				Committed: func(p trie.CopyProgress) { final = p }})
			trietest.Must(t, err, "CopyFrom")
			if r := trietest.DBRoot(t, src); r != root {
				t.Fatalf("root %v, want %v", root, r)
			}
			trietest.SameRecords(t, b, want)
			// A v1 source is copied into v2 by one scan of its IDs. A v2
			// one is walked: the read-ahead's workers read all but the
			// top levels, and read them by scanning each sub-trie's ID
			// interval: the builder lays sub-tries out so.
			if f == vertex.FormatV1 {
				if !final.SourceScanned || final.ReadAhead != 0 {
					t.Fatalf("%d records, scanned %v, %d read ahead", final.Records, final.SourceScanned, final.ReadAhead)
				}
			} else if final.SourceScanned || final.ReadAhead < final.Records*95/100 || final.Scanned < final.Records*9/10 {
				t.Fatalf("%d records, %d read ahead, %d scanned", final.Records, final.ReadAhead, final.Scanned)
			}
		})
	}
}

// TestCopyRecordsStorageRoots copies stores whose contract leaves do not
// record their storage roots (as stores written before the leaves did):
// the copy records them, so its records are the builder's, whether the
// source is walked (v2) or scanned (v1).
func TestCopyRecordsStorageRoots(t *testing.T) {
	accts := trietest.StateAccounts(2000, 5)
	for _, f := range trietest.Formats {
		t.Run(f.String(), func(t *testing.T) {
			src, sb := loaded(t, f, accts, false)
			stripped := 0
			for id, rec := range trietest.Records(t, sb) {
				v, err := vertex.Decode(rec)
				trietest.Must(t, err, "decoding vertex %d", id)
				if v.Acc != nil && v.Acc.StorageKey != (hashkey.Hash{}) {
					v.Acc.StorageKey = hashkey.Hash{}
					trietest.Must(t, sb.Write(&vertex.Batch{Puts: []vertex.Record{{ID: id, Rec: vertex.Encode(nil, v)}}}), "writing vertex %d", id)
					stripped++
				}
			}
			if stripped < 100 {
				t.Fatalf("%d contract leaves recorded their storage roots, want every contract's", stripped)
			}
			_, want := loaded(t, other(f), accts, false)
			b := trie.NewMemoryBackend()
			dst, err := trie.Open(b, &trie.Options{Format: other(f), Records: vertex.ChildKeyCopies})
			trietest.Must(t, err, "Open")
			_, err = dst.CopyFrom(context.Background(), src, trie.CopyOptions{Block: src.Block()})
			trietest.Must(t, err, "CopyFrom")
			trietest.SameRecords(t, b, want)
		})
	}
}

// TestCopyScansLargeStorage copies a v2 store holding a storage trie too
// large for one range table: the read-ahead scans it child sub-trie by child
// sub-trie, so nearly every record is read by sequential scans, not by a
// seek per group.
func TestCopyScansLargeStorage(t *testing.T) {
	accts := trietest.StateAccounts(2000, 3)
	rng := rand.New(rand.NewSource(3))
	big := &accts[len(accts)/2]
	big.Storage = make([]trie.SlotLeaf, 80000) // ~130k IDs in v2: more than a table's
	for j := range big.Storage {
		rng.Read(big.Storage[j].Hash[:])
		big.Storage[j].Value = *uint256.NewInt(1 + uint64(j))
	}
	slices.SortFunc(big.Storage, func(x, y trie.SlotLeaf) int { return bytes.Compare(x.Hash[:], y.Hash[:]) })
	src, _ := loaded(t, vertex.FormatV2, accts, false)
	_, want := loaded(t, vertex.FormatV1, accts, false)
	b := trie.NewMemoryBackend()
	dst, err := trie.Open(b, &trie.Options{Format: vertex.FormatV1, Records: vertex.ChildKeyCopies})
	trietest.Must(t, err, "Open")
	var final trie.CopyProgress
	_, err = dst.CopyFrom(context.Background(), src, trie.CopyOptions{Block: src.Block(),
		Committed: func(p trie.CopyProgress) { final = p }})
	trietest.Must(t, err, "CopyFrom")
	trietest.SameRecords(t, b, want)
	if final.Scanned < final.Records*95/100 {
		t.Fatalf("%d records, %d read ahead, %d of them scanned", final.Records, final.ReadAhead, final.Scanned)
	}
}

// TestCopyGrownStore copies stores grown by random inserts (scattered v1 IDs,
// reused v2 slots) and stores without children's keys (copied into stores
// with them, so leaves are hashed): the result is the builder's store,
// whichever way the source is read. By default the whole source is
// preloaded by sequential scans (a grown store is not laid out by the
// builder, and this one fits the bound); a walk with the preload off, or a
// bound the source does not fit, has the read-ahead's workers read nearly
// all of it, child by child; by default a source that does not fit is
// rebuilt from its leaf index (every key computed, nothing read ahead).
func TestCopyGrownStore(t *testing.T) {
	accts := trietest.StateAccounts(2000, 2)
	for _, f := range trietest.Formats {
		for _, noChild := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/nochildkeys=%v", f, noChild), func(t *testing.T) {
				src := newMem(t, f, noChild)
				trietest.GrowState(t, src, accts, 300, 3)
				for _, to := range trietest.Formats {
					_, want := loaded(t, to, accts, false)
					for _, m := range []struct {
						preload int
						method  trie.CopyMethod
					}{{0, trie.CopyAuto}, {-1, trie.CopyWalk}, {64 << 10, trie.CopyWalk}, {64 << 10, trie.CopyAuto}, {0, trie.CopyRebuild}} {
						b := trie.NewMemoryBackend()
						dst, err := trie.Open(b, &trie.Options{Format: to, Records: vertex.ChildKeyCopies})
						trietest.Must(t, err, "Open")
						var final trie.CopyProgress
						_, err = dst.CopyFrom(context.Background(), src, trie.CopyOptions{Block: 9, PreloadBytes: m.preload, Method: m.method,
							Committed: func(p trie.CopyProgress) { final = p }})
						trietest.Must(t, err, "CopyFrom to %v, %+v", to, m)
						trietest.SameRecords(t, b, want)
						records, err := src.RecordCount() // after CopyFrom, which waits for src's pending persist
						trietest.Must(t, err, "RecordCount")
						rebuilt := m.method == trie.CopyRebuild || (m.method == trie.CopyAuto && m.preload != 0)
						switch {
						case rebuilt && (final.Preloaded != 0 || final.ReadAhead != 0 || final.KeysComputed != final.Records || final.Fraction != 1):
							t.Errorf("to %v, %+v: rebuilt, yet %d preloaded, %d read ahead, %d keys computed for %d records, fraction %v",
								to, m, final.Preloaded, final.ReadAhead, final.KeysComputed, final.Records, final.Fraction)
						case rebuilt:
						case m.preload == 0 && (final.Preloaded != records || final.ReadAhead != 0):
							t.Errorf("to %v: %d of %d source records preloaded, %d read ahead", to, final.Preloaded, records, final.ReadAhead)
						case m.preload != 0 && (final.Preloaded != 0 || final.ReadAhead < final.Records*9/10):
							t.Errorf("to %v, %+v: %d preloaded, %d of %d records read ahead", to, m, final.Preloaded, final.ReadAhead, final.Records)
						}
					}
				}
			})
		}
	}
}

// TestCopyComputesFewKeys copies a store written with each key once into
// the other layout, once with each key once (the copy computes the keys of
// short branches only, whose records never store them: a few dozen here,
// where hashing every leaf would be thousands) and once with children's keys
// (every child key the source lacks is computed), and checks the count
// CopyProgress reports at the commit.
func TestCopyComputesFewKeys(t *testing.T) {
	accts := trietest.StateAccounts(3000, 4)
	for _, f := range trietest.Formats {
		src, _ := loaded(t, f, accts, true)
		for _, to := range []vertex.Records{vertex.KeysOnce, vertex.ChildKeyCopies} {
			dst, err := trie.Open(trie.NewMemoryBackend(), &trie.Options{Format: other(f), Records: to})
			trietest.Must(t, err, "Open")
			var final trie.CopyProgress
			_, err = dst.CopyFrom(context.Background(), src, trie.CopyOptions{Block: src.Block(),
				Committed: func(p trie.CopyProgress) { final = p }})
			trietest.Must(t, err, "CopyFrom %v into %v, %v", f, other(f), to)
			few := final.KeysComputed < final.Records/50
			if few != (to == vertex.KeysOnce) {
				t.Errorf("%v into %v, %v: %d keys computed for %d records", f, other(f), to, final.KeysComputed, final.Records)
			}
		}
	}
}

// TestCopyResumes stops a copy at every checkpoint in turn and resumes it
// from there in a reopened target: the records are those of one run.
func TestCopyResumes(t *testing.T) {
	accts := trietest.StateAccounts(3000, 4)
	for _, f := range trietest.Formats {
		for _, src := range []struct {
			grown   bool
			preload int
			method  trie.CopyMethod
		}{{false, 0, trie.CopyWalk}, {true, -1, trie.CopyWalk}, {true, 0, trie.CopyWalk}, {true, -1, trie.CopyAuto}, {false, 0, trie.CopyRebuild}, {false, 0, trie.CopyScan}} {
			if src.method == trie.CopyScan && f != vertex.FormatV2 {
				continue // a scan copies v1 into v2
			}
			t.Run(fmt.Sprintf("%v/grown=%v/preload=%d/method=%d", f, src.grown, src.preload, src.method), func(t *testing.T) {
				testCopyResumes(t, f, src.grown, src.preload, src.method, accts)
			})
		}
	}
}

// testCopyResumes is TestCopyResumes into format f, from a source of the
// other format built by the builder or grown by frames, with
// CopyOptions.PreloadBytes preload (a grown source is preloaded unless it
// is negative) and method (CopyAuto rebuilds a grown source that is not
// preloaded).
func testCopyResumes(t *testing.T, f vertex.Format, grown bool, preload int, method trie.CopyMethod, accts []trie.AccountLeaf) {
	var src *trie.DB
	if grown {
		src = newMem(t, other(f), false)
		trietest.GrowState(t, src, accts, 400, 5)
	} else {
		src, _ = loaded(t, other(f), accts, false)
	}
	_, want := loaded(t, f, accts, false)
	for stop := 1; ; stop++ {
		b := trie.NewMemoryBackend()
		dst, err := trie.Open(b, &trie.Options{Format: f, Records: vertex.ChildKeyCopies})
		trietest.Must(t, err, "Open")
		ctx, cancel := context.WithCancel(context.Background())
		var state []byte
		var atStop uint64
		n := 0
		_, err = dst.CopyFrom(ctx, src, trie.CopyOptions{Block: 9, CheckpointRecords: 300, PreloadBytes: preload, Method: method,
			Checkpoint: func(s []byte, p trie.CopyProgress) error {
				if n++; n == stop {
					state, atStop = s, p.Records
					cancel()
				}
				return nil
			}})
		cancel()
		if state == nil || err == nil { // no checkpoint left, or none after it to stop at
			trietest.Must(t, err, "CopyFrom")
			trietest.SameRecords(t, b, want)
			if stop < 4 {
				t.Fatalf("only %d checkpoints", stop-1)
			}
			return
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("stop %d: %v, want context.Canceled", stop, err)
		}
		dst, err = trie.Open(b, &trie.Options{Format: f, Records: vertex.ChildKeyCopies})
		trietest.Must(t, err, "reopen")
		var final trie.CopyProgress
		_, err = dst.CopyFrom(context.Background(), src, trie.CopyOptions{Block: 9, Resume: state, PreloadBytes: preload, Method: method,
			Committed: func(p trie.CopyProgress) { final = p }})
		trietest.Must(t, err, "resume at %d", stop)
		trietest.SameRecords(t, b, want)
		if rebuilt := method == trie.CopyRebuild || (method == trie.CopyAuto && grown && preload < 0); rebuilt || final.Rebuilt {
			if !rebuilt || !final.Rebuilt || final.ReadAhead != 0 || final.KeysComputed != final.Records-atStop {
				t.Fatalf("resumed at %d: rebuilt %v, %d read ahead, %d keys computed for %d records", stop, final.Rebuilt, final.ReadAhead, final.KeysComputed, final.Records-atStop)
			}
			continue
		}
		if method == trie.CopyScan {
			if !final.SourceScanned || final.ReadAhead != 0 {
				t.Fatalf("resumed at %d: scanned %v, %d read ahead", stop, final.SourceScanned, final.ReadAhead)
			}
			continue
		}
		if grown && preload == 0 {
			if final.Preloaded == 0 || final.ReadAhead != 0 {
				t.Fatalf("resumed at %d: %d records preloaded, %d read ahead", stop, final.Preloaded, final.ReadAhead)
			}
			continue
		}
		// The read-ahead starts where the walk resumes: it reads
		// all of the rest but the sub-trie resumed in (a
		// sixteenth of the state here) and the top levels.
		if run := final.Records - atStop; final.ReadAhead+final.Records/8 < run {
			t.Fatalf("resumed at %d: %d records copied, %d read ahead", stop, run, final.ReadAhead)
		}
	}
}

// TestCopyRefuses checks a copy into a non-empty target or with a bad resume
// state writes nothing.
func TestCopyRefuses(t *testing.T) {
	accts := trietest.StateAccounts(100, 5)
	src, _ := loaded(t, vertex.FormatV1, accts, false)
	full, _ := loaded(t, vertex.FormatV2, accts, false)
	if _, err := full.CopyFrom(context.Background(), src, trie.CopyOptions{Block: 10}); !errors.Is(err, trie.ErrCopy) {
		t.Fatalf("copy into a full target: %v", err)
	}
	dst := newMem(t, vertex.FormatV2, false)
	if _, err := dst.CopyFrom(context.Background(), src, trie.CopyOptions{Resume: []byte("junk")}); !errors.Is(err, trie.ErrCopy) {
		t.Fatalf("junk resume state: %v", err)
	}
	if _, err := dst.CopyFrom(context.Background(), dst, trie.CopyOptions{}); !errors.Is(err, trie.ErrCopy) {
		t.Fatalf("copy into itself: %v", err)
	}
}

// TestCopyDamagedSource copies sources with a leaf record deep in the trie
// removed (from a built store, and from one grown by frames), or a branch
// record overwritten with junk (a leaf is copied
// undecoded; the migration's verification catches it): the copy fails with
// the error a walk of the damaged source gives (the read-ahead's workers
// meet the damage first, and the walk then reads that part of the source
// itself), and the target stays empty.
func TestCopyDamagedSource(t *testing.T) {
	accts := trietest.StateAccounts(3000, 6)
	for _, f := range trietest.Formats {
		for _, damage := range []string{"missing", "junk", "missing from a grown store"} {
			t.Run(fmt.Sprintf("%v/%s", f, damage), func(t *testing.T) {
				src, b := loaded(t, f, accts, false)
				if damage != "junk" && damage != "missing" {
					b = trie.NewMemoryBackend()
					var err error
					src, err = trie.Open(b, &trie.Options{Format: f})
					trietest.Must(t, err, "Open")
					trietest.GrowState(t, src, accts, 400, 7)
					damage = "missing"
				}
				var ids []vertex.ID // the leaves, or for junk the branches
				trietest.Must(t, b.VertexRange(vertex.RootID, 1<<16, func(id vertex.ID, rec []byte) error {
					if (rec[0]&3 == 1) == (damage == "missing") {
						ids = append(ids, id)
					}
					return nil
				}), "VertexRange")
				hit := ids[len(ids)*2/3]
				batch := &vertex.Batch{Deletes: []vertex.ID{hit}}
				if damage == "junk" {
					batch = &vertex.Batch{Puts: []vertex.Record{{ID: hit, Rec: []byte{0x00, 0xff, 0xff, 0xff}}}}
				}
				trietest.Must(t, b.Write(batch), "damaging vertex %d", hit)
				dst := newMem(t, other(f), false)
				_, err := dst.CopyFrom(context.Background(), src, trie.CopyOptions{Block: 9})
				if err == nil || damage == "missing" && !errors.Is(err, trie.ErrCopy) {
					t.Fatalf("copy of a source with vertex %d %s: %v", hit, damage, err)
				}
				if !strings.Contains(err.Error(), fmt.Sprint(hit)) && !strings.Contains(err.Error(), "missing") {
					t.Errorf("the error names neither the vertex nor what is missing: %v", err)
				}
				if r := trietest.DBRoot(t, dst); r != hashkey.EmptyRoot {
					t.Fatalf("the failed copy's target has root %v", r)
				}
			})
		}
	}
}

// TestCopyRebuildRefuses rebuilds from sources whose leaf index does not
// match their trie (an account's value swapped for another's, a slot whose
// account has no entry, an entry that is not a leaf): each copy fails with
// ErrCopy and leaves the target empty, and a walk of the same source
// copies it.
func TestCopyRebuildRefuses(t *testing.T) {
	accts := trietest.StateAccounts(500, 6)
	k0, k1 := accts[10].AddrHash, accts[11].AddrHash
	for _, c := range []struct {
		name, why string
		key, val  func(b trie.Backend) []byte
	}{
		{"swapped account", "gives root", func(trie.Backend) []byte { return k0[:] }, func(b trie.Backend) []byte { v, _ := b.Leaf(k1[:]); return v }},
		{"slot without account", "without its account", func(trie.Backend) []byte { return append(bytes.Repeat([]byte{0xff}, 32), k0[:]...) },
			func(trie.Backend) []byte { return []byte{0x0d, 0x01, 0x20, 0x01, 0x07} }},
		{"not a leaf", "corrupt", func(trie.Backend) []byte { return k0[:] }, func(trie.Backend) []byte { return []byte{0x01} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			src, b := loaded(t, vertex.FormatV1, accts, false)
			trietest.Must(t, b.Write(&vertex.Batch{Leaves: []vertex.LeafEntry{{Key: c.key(b), Val: c.val(b)}}}), "tampering with the index")
			dst := newMem(t, vertex.FormatV2, false)
			_, err := dst.CopyFrom(context.Background(), src, trie.CopyOptions{Block: src.Block(), Method: trie.CopyRebuild})
			if !errors.Is(err, trie.ErrCopy) || !strings.Contains(err.Error(), c.why) {
				t.Fatalf("rebuild: %v, want ErrCopy saying %q", err, c.why)
			}
			if r := trietest.DBRoot(t, dst); r != hashkey.EmptyRoot || dst.Block() != 0 {
				t.Fatalf("after a failed rebuild the target is at block %d, root %v", dst.Block(), r)
			}
			root, err := dst.CopyFrom(context.Background(), src, trie.CopyOptions{Block: src.Block(), Method: trie.CopyWalk})
			trietest.Must(t, err, "walk")
			if root != trietest.DBRoot(t, src) {
				t.Fatalf("walked root %v, want the source's", root)
			}
		})
	}
}

// TestSourceLaidOut: a store the builder wrote counts as laid out (its
// sub-tries' IDs in key order, each v2 branch's slots after its children's
// sub-tries), and its copy reads it by interval scans; one grown by frames
// in random key order does not. Nor, in v2, does one grown by frames in key
// order: its branches took their slots when they were made, before their
// later children's sub-tries, as the builder's did before it handed IDs out
// as vertices are finished; intervals guessed for that layout would scan
// the wrong records.
func TestSourceLaidOut(t *testing.T) {
	accts := trietest.StateAccounts(3000, 21)
	for _, f := range trietest.Formats {
		built, _ := loaded(t, f, accts, false)
		grown := newMem(t, f, false)
		trietest.GrowState(t, grown, accts, 500, 3)
		trietest.Must(t, grown.Flush(), "Flush")
		inOrder := newMem(t, f, false)
		fr := inOrder.Begin()
		for i := range accts {
			a := &accts[i]
			trietest.Must(t, fr.UpdateAccount(a.AddrHash, a.Account), "UpdateAccount")
			for j := range a.Storage {
				trietest.Must(t, fr.UpdateStorage(a.AddrHash, a.Storage[j].Hash, &a.Storage[j].Value), "UpdateStorage")
			}
		}
		trietest.Must(t, inOrder.Persist(fr, 1), "Persist")
		trietest.Must(t, inOrder.Flush(), "Flush")
		if !trie.SourceLaidOut(built) {
			t.Errorf("%v: the builder's store is not taken as laid out", f)
		}
		if trie.SourceLaidOut(grown) {
			t.Errorf("%v: a store grown in random order is taken as laid out", f)
		}
		if f == vertex.FormatV2 && trie.SourceLaidOut(inOrder) {
			t.Errorf("%v: a store grown in key order, its slots taken before its children's, is taken as laid out", f)
		}
		for _, db := range []*trie.DB{built, grown, inOrder} {
			trietest.Must(t, db.Close(), "Close")
		}
	}
}
