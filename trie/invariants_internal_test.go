package trie

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"testing"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/vertex"
	"github.com/holiman/uint256"
)

// invState builds a hashed frame of 200 accounts (every 4th with 5 slots) in a
// new memory database of format f.
func invState(t *testing.T, f vertex.Format) (*DB, *Frame) {
	t.Helper()
	db, err := Open(NewMemoryBackend(), &Options{Format: f, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	fr := db.Begin()
	for i := 0; i < 200; i++ {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], uint64(i))
		addr := hashkey.Keccak256([]byte("inv"), b[:])
		if err := fr.UpdateAccount(addr, Account{Nonce: uint64(i) + 1}); err != nil {
			t.Fatal(err)
		}
		for s := 0; i%4 == 0 && s < 5; s++ {
			if err := fr.UpdateStorage(addr, hashkey.Keccak256(b[:], []byte{byte(s)}), uint256.NewInt(uint64(s+1))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := fr.StateRoot(); err != nil {
		t.Fatal(err)
	}
	if err := fr.checkInvariants(); err != nil {
		t.Fatalf("untampered state: %v", err)
	}
	return db, fr
}

// invFind returns the lowest ID fr holds whose vertex satisfies ok.
func invFind(t *testing.T, fr *Frame, ok func(v *node) bool) (vertex.ID, *node) {
	t.Helper()
	var ids []vertex.ID
	fr.vtx.Each(func(id vertex.ID, v *node, rec []byte) {
		if rec != nil {
			v = decodePacked(rec)
		}
		if v != nil && ok(v) {
			ids = append(ids, id)
		}
	})
	if len(ids) == 0 {
		t.Fatal("no such vertex in the frame")
	}
	id := slices.Min(ids)
	v, _ := fr.vtx.Lookup(id)
	return id, v
}

func isAccountLeaf(v *node) bool {
	return v.Kind == vertex.Leaf && v.Payload == vertex.AccountPayload
}

func isBranchOfTwo(v *node) bool {
	return v.Kind == vertex.Branch && bits.OnesCount16(v.Used) == 2 && !v.HasValue()
}

// TestInvariantsCatchCorruption tampers with one vertex of a correct state at a
// time and expects the checker to name that vertex and the broken invariant.
func TestInvariantsCatchCorruption(t *testing.T) {
	wrongKey := hashkey.NewHasher().KeyOf([]byte("not this node's RLP, long enough to be hashed"))
	cases := []struct {
		name   string
		want   string
		tamper func(t *testing.T, fr *Frame) vertex.ID
	}{
		{"wrong stored key", "stored key", func(t *testing.T, fr *Frame) vertex.ID {
			id, v := invFind(t, fr, isAccountLeaf)
			v.Key = wrongKey
			return id
		}},
		{"slot in the account trie", "payload kind", func(t *testing.T, fr *Frame) vertex.ID {
			id, v := invFind(t, fr, isAccountLeaf)
			v.Payload, v.Value, v.Acc = vertex.SlotPayload, []byte{1}, nil
			return id
		}},
		{"missing child", "missing", func(t *testing.T, fr *Frame) vertex.ID {
			_, v := invFind(t, fr, isBranchOfTwo)
			child := v.Child(bits.TrailingZeros16(v.Used))
			fr.vtx.Set(child, nil)
			return child
		}},
		{"uncollapsed branch", "not collapsed", func(t *testing.T, fr *Frame) vertex.ID {
			id, v := invFind(t, fr, isBranchOfTwo)
			n := bits.TrailingZeros16(v.Used)
			fr.vtx.Set(v.Child(n), nil)
			v.Used &^= 1 << n
			if v.Kids != nil {
				v.Kids[n] = vertex.NoID
			}
			return id
		}},
		{"wrong child key", "ChildKeys", func(t *testing.T, fr *Frame) vertex.ID {
			id, v := invFind(t, fr, func(v *node) bool { return v.Kind == vertex.Branch && v.ChildKeys != nil })
			var kids [16]hashkey.Key
			v.ChildKeys.Unpack(&kids)
			kids[bits.TrailingZeros16(v.Used)] = wrongKey
			v.ChildKeys = vertex.PackChildKeys(nil, v.Used, &kids)
			return id
		}},
		{"ID above the top", "above the allocator's top", func(t *testing.T, fr *Frame) vertex.ID {
			_, v := invFind(t, fr, func(v *node) bool { return isAccountLeaf(v) && v.Acc.Storage != vertex.NoID })
			a := *v.Acc
			a.Storage = fr.alloc.Top + 5
			v.Acc = &a
			return a.Storage
		}},
	}
	for _, f := range []vertex.Format{vertex.FormatV1, vertex.FormatV2} {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%v/%s", f, c.name), func(t *testing.T) {
				_, fr := invState(t, f)
				id := c.tamper(t, fr)
				err := fr.checkInvariants()
				if err == nil {
					t.Fatal("the checker found nothing")
				}
				if msg := err.Error(); !strings.Contains(msg, fmt.Sprintf("vertex %d at ", id)) || !strings.Contains(msg, c.want) {
					t.Fatalf("error does not name vertex %d and %q:\n%v", id, c.want, err)
				}
			})
		}
	}
}

// TestInvariantsCatchCorruptRecord writes a branch record with a wrong stored
// key through the backend of a persisted state (records keep the keys of
// branches only): the checker of a new frame names it.
func TestInvariantsCatchCorruptRecord(t *testing.T) {
	db, fr := invState(t, vertex.FormatV2)
	if err := db.Persist(fr, 1); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil { // the test writes the backend below
		t.Fatal(err)
	}
	id := vertex.RootID + 1
	var v *node
	for ; id <= db.base.alloc.Top; id++ {
		if v, _ = db.load(id); v != nil && v.Kind == vertex.Branch && v.Key.IsHash() {
			break
		}
	}
	v.Key = hashkey.NewHasher().KeyOf([]byte("not this node's RLP, long enough to be hashed"))
	if err := db.backend.Write(&vertex.Batch{Puts: []vertex.Record{{ID: id, Rec: vertex.Encode(nil, &v.Vertex)}}}); err != nil {
		t.Fatal(err)
	}
	db.cache.Refresh(nil, []vertex.ID{id})
	err := db.Begin().checkInvariants()
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("vertex %d at ", id)) || !strings.Contains(err.Error(), "stored key") {
		t.Fatalf("checker on a store with a corrupt record of vertex %d: %v", id, err)
	}
}
