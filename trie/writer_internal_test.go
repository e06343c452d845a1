package trie

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/hexstate/hexstate/vertex"
	"github.com/holiman/uint256"
)

// TestPendingStoreOf checks that a pending write's lookup through the
// frames' chain index names the store a walk of the stores, newest first,
// finds for every ID: a chain of frames with accounts updated, added and
// deleted again, some storage, and the newest frame unsealed, as Persist
// takes them.
func TestPendingStoreOf(t *testing.T) {
	for _, f := range []vertex.Format{vertex.FormatV1, vertex.FormatV2} {
		db := fiOpen(t, f, 1)
		fr := db.Begin()
		for i := range 500 {
			fiMust(t, fr.UpdateAccount(fiAddr(i), fiAcc(uint64(i))))
		}
		r := rand.New(rand.NewPCG(3, 4))
		for range 12 {
			fr = fr.Begin()
			for range 60 {
				i := r.IntN(700)
				switch r.IntN(5) {
				case 0:
					fiMust(t, fr.DeleteAccount(fiAddr(i)))
				case 1:
					if err := fr.UpdateStorage(fiAddr(i%500), fiSlot(r.IntN(50)), uint256.NewInt(uint64(i+1))); err != nil && !errors.Is(err, ErrNoAccount) {
						t.Fatal(err)
					}
				default:
					fiMust(t, fr.UpdateAccount(fiAddr(i), fiAcc(uint64(r.IntN(1000)))))
				}
			}
			if _, err := fr.StateRoot(); err != nil {
				t.Fatal(err)
			}
		}
		p := &pendingWrite{below: fr.below, seq: fr.seq}
		for g := fr; g != db.base; g = g.parent {
			p.stores = append(p.stores, g.vtx)
		}
		for id := vertex.ID(1); id < fr.alloc.Top+16; id++ {
			want := -1
			for i := range p.stores {
				if p.stores[i].Holds(id) {
					want = i
					break
				}
			}
			got, rec := p.storeOf(id)
			if got != want {
				t.Fatalf("%v: ID %d: storeOf says store %d, the walk %d", f, id, got, want)
			}
			if got >= 0 {
				v, _ := p.stores[got].LookupAt(id, rec)
				w, _ := p.stores[got].Lookup(id)
				if (v == nil) != (w == nil) || (v != nil && (v.Kind != w.Kind || !bytes.Equal(v.Path, w.Path) || !bytes.Equal(v.Value, w.Value))) {
					t.Fatalf("%v: ID %d: the record the index names differs from the store's vertex", f, id)
				}
			}
		}
	}
}

// TestPacerStandsAside checks that the writer's pacer, at a yield point,
// waits while a parallel hashing is counted, for pacerWaitMax at most, and
// that a hashing that never ends does not stop the writer.
func TestPacerStandsAside(t *testing.T) {
	var busy atomic.Int32
	busy.Store(1) // a hashing that never ends
	p := pacer{busy: &busy}
	done := make(chan time.Duration)
	go func() {
		for i := 0; i < 511; i++ {
			p.tick()
		}
		start := time.Now()
		p.tick() // the 512th step: a yield point
		done <- time.Since(start)
	}()
	select {
	case d := <-done:
		if d < pacerWaitMax {
			t.Fatalf("the pacer waited %v behind a hashing, want %v", d, pacerWaitMax)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the pacer waited for good behind a hashing that did not end")
	}
}

// TestRecordRoomKeepsRecordsInRoom: every record recordRoom keeps is in a
// buffer its room handed out, one larger than the room left (whose append
// moved to the heap) included, with its bytes intact.
func TestRecordRoomKeepsRecordsInRoom(t *testing.T) {
	var bufs [][]byte
	room := func(n int) []byte {
		b := make([]byte, 0, max(n, 2*maxRecord))
		bufs = append(bufs, b[:cap(b)])
		return b
	}
	inRoom := func(rec []byte) bool {
		p := uintptr(unsafe.Pointer(unsafe.SliceData(rec)))
		for _, b := range bufs {
			lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
			if p >= lo && p+uintptr(len(rec)) <= lo+uintptr(len(b)) {
				return true
			}
		}
		return false
	}
	r := recordRoom{room: room}
	for i, size := range []int{100, 700, 5000, 100, 3*maxRecord + 1, 10} {
		b := r.next()
		for j := range size {
			b = append(b, byte(i+j))
		}
		rec := r.keep(b)
		if len(rec) != size || cap(rec) != size || !inRoom(rec) {
			t.Fatalf("record %d (%d bytes): len %d cap %d, in room's buffers: %v", i, size, len(rec), cap(rec), inRoom(rec))
		}
		for j := range rec {
			if rec[j] != byte(i+j) {
				t.Fatalf("record %d: byte %d is %d", i, j, rec[j])
			}
		}
	}
}
