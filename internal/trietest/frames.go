package trietest

// Frame-model tests that run on every store (from trie/frames_test.go).

import (
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/holiman/uint256"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// FramesReadFallThrough: a frame reads its own writes, then its parent's,
// then the persisted base; a parent does not see its child's writes; a new frame
// on the base sees only the base.
func FramesReadFallThrough(t *testing.T, stores ...Opener) {
	Each(t, stores, func(t *testing.T, st *Store, f vertex.Format) {
		db := st.Open(f)
		a, b, c := Addr(1), Addr(2), Addr(3)
		s1, s2 := Slot(1), Slot(2)

		m0 := Model{}
		g := db.Begin()
		PutAccount(t, g, m0, a, Acc(1, 10))
		PutSlot(t, g, m0, a, s1, 11)
		PutSlot(t, g, m0, a, s2, 12)
		PutAccount(t, g, m0, b, Acc(2, 20))
		root0 := CheckRoot(t, g, f, m0, "genesis")
		if err := db.Persist(g, 1); err != nil {
			t.Fatal(err)
		}

		m1 := m0.Clone()
		f1 := db.Begin()
		PutAccount(t, f1, m1, b, Acc(20, 200))
		PutAccount(t, f1, m1, c, Acc(3, 30))
		PutSlot(t, f1, m1, a, s1, 111)

		m2 := m1.Clone()
		f2 := f1.Begin()
		PutAccount(t, f2, m2, c, Acc(30, 300))
		PutSlot(t, f2, m2, c, s1, 5)
		PutSlot(t, f2, m2, a, s2, 0)

		// f2 sees base (a's nonce), f1 (b, a.s1) and itself (c, a.s2 deleted).
		CheckState(t, f2, m2)
		if v, _ := f2.Storage(a, s2); !v.IsZero() {
			t.Fatalf("f2: deleted slot reads %v", &v)
		}
		// f1 sees neither of f2's writes.
		CheckState(t, f1, m1)
		if v, _ := f1.Storage(c, s1); !v.IsZero() {
			t.Fatalf("f1 sees its child's slot: %v", &v)
		}
		// A new frame on the base sees the base only.
		f0 := db.Begin()
		CheckState(t, f0, m0, c)

		CheckRoot(t, f2, f, m2, "f2")
		CheckRoot(t, f1, f, m1, "f1")
		if got := CheckRoot(t, f0, f, m0, "f0"); got != root0 {
			t.Fatalf("base frame root %v, persisted %v", got, root0)
		}
		if got, _ := db.StateRoot(); got != root0 {
			t.Fatalf("DB.StateRoot = %v, want %v", got, root0)
		}
	})
}

// FramesForks: two children of one frame keep separate states and roots;
// persisting one abandons the other and its descendants (ErrStale on reads and
// writes) while descendants of the persisted frame carry on; a reopened DB has
// the persisted root and block.
func FramesForks(t *testing.T, stores ...Opener) {
	Each(t, stores, func(t *testing.T, st *Store, f vertex.Format) {
		db := st.Open(f)
		m0 := Genesis(t, db, 200)

		p := db.Begin()
		mp := m0.Clone()
		for i := 0; i < 200; i += 7 {
			PutAccount(t, p, mp, Addr(i), Acc(uint64(i)+1, 7))
		}
		PutSlot(t, p, mp, Addr(0), Slot(0), 42)
		rootP := CheckRoot(t, p, f, mp, "p")

		// Two forks of p changing the same accounts differently; both create a new
		// account with storage (taking the same fresh IDs for different vertices).
		x, y := p.Begin(), p.Begin()
		mx, my := mp.Clone(), mp.Clone()
		for i := 0; i < 200; i += 3 {
			PutAccount(t, x, mx, Addr(i), Acc(1, uint64(i)))
			PutAccount(t, y, my, Addr(i), Acc(2, uint64(i)))
		}
		PutAccount(t, x, mx, Addr(1000), Acc(1, 1))
		PutAccount(t, y, my, Addr(2000), Acc(2, 2))
		for s := 0; s < 20; s++ {
			PutSlot(t, x, mx, Addr(1000), Slot(s), uint64(s+1))
			PutSlot(t, y, my, Addr(2000), Slot(s), uint64(s+100))
		}
		PutSlot(t, x, mx, Addr(0), Slot(0), 0)
		DropAccount(t, y, my, Addr(5))

		rootX := CheckRoot(t, x, f, mx, "fork x")
		rootY := CheckRoot(t, y, f, my, "fork y")
		if rootX == rootY {
			t.Fatal("forks with different changes have the same root")
		}
		if got := CheckRoot(t, p, f, mp, "p after its children wrote"); got != rootP {
			t.Fatalf("p's root changed from %v to %v", rootP, got)
		}
		CheckState(t, x, mx, Addr(2000))
		CheckState(t, y, my, Addr(1000), Addr(5))

		x2, y2 := x.Begin(), y.Begin()
		mx2, my2 := mx.Clone(), my.Clone()
		PutAccount(t, x2, mx2, Addr(3000), Acc(3, 3))
		PutAccount(t, y2, my2, Addr(4000), Acc(4, 4))
		PutSlot(t, y2, my2, Addr(2000), Slot(0), 0)
		CheckRoot(t, x2, f, mx2, "x2")
		CheckRoot(t, y2, f, my2, "y2")

		// Persisting the common parent keeps both forks alive.
		if err := db.Persist(p, 2); err != nil {
			t.Fatal(err)
		}
		CheckState(t, x, mx)
		CheckState(t, y2, my2)
		CheckRoot(t, x2, f, mx2, "x2 after p persisted")

		// Persisting y abandons x and x2.
		if err := db.Persist(y, 3); err != nil {
			t.Fatal(err)
		}
		ExpectErr(t, x, trie.ErrStale, true, "abandoned fork x")
		ExpectErr(t, x2, trie.ErrStale, true, "child x2 of abandoned fork")
		ExpectErr(t, x2.Begin(), trie.ErrStale, true, "frame begun on x2 after abandonment")
		ExpectErr(t, p, trie.ErrStale, true, "p, below the new base")
		for _, fr := range []*trie.Frame{x, x2, p} {
			if err := db.Persist(fr, 4); !errors.Is(err, trie.ErrStale) {
				t.Fatalf("Persist of a stale frame = %v, want ErrStale", err)
			}
		}
		if got, _ := db.StateRoot(); got != rootY || db.Block() != 3 {
			t.Fatalf("after Persist(y, 3): root %v block %d, want %v 3", got, db.Block(), rootY)
		}

		// y (persisted, sealed) is still readable; y2 carries on and can still write.
		CheckState(t, y, my)
		CheckState(t, y2, my2)
		PutAccount(t, y2, my2, Addr(5000), Acc(5, 5))
		PutSlot(t, y2, my2, Addr(5000), Slot(9), 99)
		rootY2 := CheckRoot(t, y2, f, my2, "y2 after y persisted")
		if err := db.Persist(y2, 4); err != nil {
			t.Fatal(err)
		}

		db = st.Reopen(db, f)
		if got, err := db.StateRoot(); err != nil || got != rootY2 || db.Block() != 4 {
			t.Fatalf("reopened: root %v (%v) block %d, want %v 4", got, err, db.Block(), rootY2)
		}
		fr := db.Begin()
		CheckState(t, fr, my2, Addr(1000), Addr(3000), Addr(5))
		CheckRoot(t, fr, f, my2, "reopened")
	})
}

// FramesRollback: Rollback drops a frame; its descendants turn stale, its
// siblings and parent are unaffected.
func FramesRollback(t *testing.T, stores ...Opener) {
	Each(t, stores, func(t *testing.T, st *Store, f vertex.Format) {
		db := st.Open(f)
		m0 := Genesis(t, db, 100)

		p := db.Begin()
		mp := m0.Clone()
		PutAccount(t, p, mp, Addr(1), Acc(99, 99))
		x, y := p.Begin(), p.Begin()
		mx, my := mp.Clone(), mp.Clone()
		PutSlot(t, x, mx, Addr(1), Slot(1), 1)
		PutSlot(t, y, my, Addr(1), Slot(1), 2)
		x2 := x.Begin()
		rootY := CheckRoot(t, y, f, my, "y")
		rootP := CheckRoot(t, p, f, mp, "p")

		x.Rollback()
		ExpectErr(t, x, trie.ErrStale, true, "rolled-back x")
		ExpectErr(t, x2, trie.ErrStale, true, "child of rolled-back x")
		x.Rollback() // a second Rollback is harmless
		if err := db.Persist(x2, 2); !errors.Is(err, trie.ErrStale) {
			t.Fatalf("Persist(child of rolled-back frame) = %v, want ErrStale", err)
		}

		CheckState(t, y, my)
		if got := CheckRoot(t, y, f, my, "sibling y"); got != rootY {
			t.Fatalf("sibling root changed: %v -> %v", rootY, got)
		}
		if got := CheckRoot(t, p, f, mp, "parent p"); got != rootP {
			t.Fatalf("parent root changed: %v -> %v", rootP, got)
		}
		// p stays sealed: it had children, even if one was rolled back.
		ExpectErr(t, p, trie.ErrSealed, false, "parent of rolled-back frame")

		// Rolling back p turns y stale too.
		p.Rollback()
		ExpectErr(t, y, trie.ErrStale, true, "child of rolled-back p")
		if got, _ := db.StateRoot(); got != RebuildRoot(t, f, m0) || db.Block() != 1 {
			t.Fatalf("rollbacks changed the persisted state: %v block %d", got, db.Block())
		}

		// A rolled-back leaf frame: the next frame starts from the base again.
		z := db.Begin()
		PutAccount(t, z, m0.Clone(), Addr(1), Acc(5, 5))
		z.Rollback()
		ExpectErr(t, z, trie.ErrStale, true, "rolled-back leaf frame")
		n := db.Begin()
		CheckState(t, n, m0)
		mn := m0.Clone()
		PutAccount(t, n, mn, Addr(7), Acc(7, 7))
		if err := db.Persist(n, 2); err != nil {
			t.Fatal(err)
		}
		// Rollback of the persisted base is ignored.
		n.Rollback()
		CheckState(t, n, mn)
		db = st.Reopen(db, f)
		CheckRoot(t, db.Begin(), f, mn, "reopened after rollbacks")
	})
}

// FramesDeleteAccountStorage: deleting an account deletes its storage; an
// account created again, in the same frame or a later one, starts empty.
func FramesDeleteAccountStorage(t *testing.T, stores ...Opener) {
	Each(t, stores, func(t *testing.T, st *Store, f vertex.Format) {
		db := st.Open(f)
		m := Genesis(t, db, 50)
		a := Addr(10) // has slots 0..2 in the base
		if len(m[a].Slots) == 0 {
			t.Fatal("test setup: account without storage")
		}
		old := slices.Collect(maps.Keys(m[a].Slots))

		checkEmpty := func(fr *trie.Frame, a hashkey.Hash, old []hashkey.Hash, what string) {
			t.Helper()
			for _, s := range old {
				if v, err := fr.Storage(a, s); err != nil || !v.IsZero() {
					t.Fatalf("%s: old slot reads %v, %v; want 0", what, &v, err)
				}
			}
			if r, err := fr.StorageRoot(a); err != nil || r != hashkey.EmptyRoot {
				t.Fatalf("%s: StorageRoot = %v, %v; want EmptyRoot", what, r, err)
			}
		}

		// Same frame, storage in the base: delete and re-create.
		fr := db.Begin()
		DropAccount(t, fr, m, a)
		PutAccount(t, fr, m, a, Acc(1, 1))
		checkEmpty(fr, a, old, "re-created in the same frame")
		CheckState(t, fr, m)
		CheckRoot(t, fr, f, m, "re-created in the same frame")
		PutSlot(t, fr, m, a, Slot(77), 77)
		CheckRoot(t, fr, f, m, "re-created with a new slot")
		if err := db.Persist(fr, 2); err != nil {
			t.Fatal(err)
		}

		// Storage created and deleted within one frame.
		b := Addr(11)
		fr = db.Begin()
		for s := 0; s < 40; s++ {
			PutSlot(t, fr, m, b, Slot(s), uint64(s+1))
		}
		DropAccount(t, fr, m, b)
		PutAccount(t, fr, m, b, Acc(2, 2))
		if r, _ := fr.StorageRoot(b); r != hashkey.EmptyRoot {
			t.Fatalf("re-created account b: StorageRoot %v", r)
		}
		CheckRoot(t, fr, f, m, "storage created, deleted, re-created in one frame")

		// Deleted in a parent frame, re-created in the child.
		c := Addr(15)
		cOld := slices.Collect(maps.Keys(m[c].Slots))
		DropAccount(t, fr, m, c)
		child := fr.Begin()
		PutAccount(t, child, m, c, Acc(3, 3))
		checkEmpty(child, c, cOld, "re-created in a child frame")
		CheckRoot(t, child, f, m, "deleted in parent, re-created in child")
		if err := db.Persist(child, 3); err != nil {
			t.Fatal(err)
		}

		db = st.Reopen(db, f)
		fr = db.Begin()
		checkEmpty(fr, c, cOld, "reopened")
		for _, s := range old {
			if v, err := fr.Storage(a, s); err != nil || !v.IsZero() {
				t.Fatalf("reopened: old slot of a reads %v, %v; want 0", &v, err)
			}
		}
		CheckState(t, fr, m)
		CheckRoot(t, fr, f, m, "reopened")
	})
}

// FramesStorageEmpties: when the last slot of a storage trie is deleted, the
// storage root becomes the empty root and the state root returns to that of the
// account without storage.
func FramesStorageEmpties(t *testing.T, stores ...Opener) {
	Each(t, stores, func(t *testing.T, st *Store, f vertex.Format) {
		db := st.Open(f)
		m := Model{}
		a := Addr(1)
		fr := db.Begin()
		PutAccount(t, fr, m, a, Acc(1, 1))
		PutAccount(t, fr, m, Addr(2), Acc(2, 2))
		bare := CheckRoot(t, fr, f, m, "no storage")
		if err := db.Persist(fr, 1); err != nil {
			t.Fatal(err)
		}

		fr = db.Begin()
		PutSlot(t, fr, m, a, Slot(1), 1)
		PutSlot(t, fr, m, a, Slot(2), 2)
		r2, _ := fr.StorageRoot(a)
		full := CheckRoot(t, fr, f, m, "two slots")
		if r2 == hashkey.EmptyRoot || full == bare {
			t.Fatal("adding storage changed neither the storage root nor the state root")
		}
		if err := db.Persist(fr, 2); err != nil {
			t.Fatal(err)
		}

		fr = db.Begin()
		PutSlot(t, fr, m, a, Slot(1), 0)
		r1, _ := fr.StorageRoot(a)
		one := CheckRoot(t, fr, f, m, "one slot left")
		if r1 == r2 || r1 == hashkey.EmptyRoot || one == full || one == bare {
			t.Fatalf("deleting one of two slots: storage root %v (was %v), state root %v", r1, r2, one)
		}
		CheckState(t, fr, m)
		// The last slot, deleted with a nil value.
		if err := fr.UpdateStorage(a, Slot(2), nil); err != nil {
			t.Fatal(err)
		}
		delete(m[a].Slots, Slot(2))
		if r, _ := fr.StorageRoot(a); r != hashkey.EmptyRoot {
			t.Fatalf("emptied storage: StorageRoot %v, want EmptyRoot", r)
		}
		if got := CheckRoot(t, fr, f, m, "storage emptied"); got != bare {
			t.Fatalf("emptied storage: state root %v, want the storage-less root %v", got, bare)
		}
		// Deleting a slot of an account without storage is a no-op.
		if err := fr.UpdateStorage(a, Slot(3), uint256.NewInt(0)); err != nil {
			t.Fatal(err)
		}
		if err := db.Persist(fr, 3); err != nil {
			t.Fatal(err)
		}
		db = st.Reopen(db, f)
		if got, _ := db.StateRoot(); got != bare {
			t.Fatalf("reopened: root %v, want %v", got, bare)
		}
		fr = db.Begin()
		CheckState(t, fr, m)
		// Storage grows again from empty.
		PutSlot(t, fr, m, a, Slot(2), 2)
		PutSlot(t, fr, m, a, Slot(1), 1)
		if got := CheckRoot(t, fr, f, m, "storage re-grown"); got != full {
			t.Fatalf("re-grown storage: root %v, want %v", got, full)
		}
	})
}
