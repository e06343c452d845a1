package trie_test

import (
	"context"
	"errors"
	"testing"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/internal/trietest"
	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

func TestCheckClean(t *testing.T) { trietest.CheckClean(t, trietest.Memory) }

func TestCheckFindsTampering(t *testing.T) { trietest.CheckFindsTampering(t, trietest.Memory) }

// TestCheckStateFrame checks a frame with unpersisted changes over a
// persisted state: its recomputed root is the frame's, a wrong WantRoot is a
// violation at the root, and the frame's unhashed changes are no violation.
func TestCheckStateFrame(t *testing.T) {
	trietest.EachFormat(t, func(t *testing.T, f vertex.Format) {
		db := checkedDB(t, f)
		fr := db.Begin()
		for i := 0; i < 50; i++ {
			trietest.Must(t, fr.UpdateAccount(trietest.Addr(i), trietest.Acc(uint64(i), 7)), "UpdateAccount")
		}
		child := fr.Begin() // hashes fr
		trietest.Must(t, child.DeleteAccount(trietest.Addr(3)), "DeleteAccount")
		trietest.Must(t, child.UpdateStorage(trietest.Addr(4), trietest.Slot(1), nil), "UpdateStorage")
		for _, workers := range []int{1, 2} {
			rep, err := child.CheckState(context.Background(), &trie.CheckOptions{Workers: workers})
			trietest.Must(t, err, "CheckState")
			trietest.Must(t, rep.Err(), "CheckState of an unhashed frame")
			want := trietest.FrameHash(t, child)
			if rep.Root != want {
				t.Fatalf("%d workers: recomputed root %v, the frame's is %v", workers, rep.Root, want)
			}
			wrong := hashkey.Keccak256([]byte("another root"))
			rep, err = child.CheckState(context.Background(), &trie.CheckOptions{Workers: workers, WantRoot: &wrong})
			trietest.Must(t, err, "CheckState")
			if len(rep.Violations) != 1 || rep.Violations[0].ID != vertex.RootID {
				t.Fatalf("%d workers: a wrong WantRoot gave %v", workers, rep.Err())
			}
		}
	})
}

// TestCheckCancelled: a cancelled context ends the check with its error.
func TestCheckCancelled(t *testing.T) {
	db := checkedDB(t, vertex.Latest)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := db.Check(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Check with a cancelled context: %v", err)
	}
	db.Close()
	if _, err := db.Check(context.Background(), nil); !errors.Is(err, trie.ErrClosed) {
		t.Fatalf("Check of a closed database: %v", err)
	}
}

// TestCheckPendingWrite: a check right after a Persist, whose write may not
// have landed yet, sees the persisted state (the frame's through the pending
// write, the database's after waiting for it).
func TestCheckPendingWrite(t *testing.T) {
	trietest.EachFormat(t, func(t *testing.T, f vertex.Format) {
		db := checkedDB(t, f)
		fr := db.Begin()
		for i := 0; i < 50; i++ {
			trietest.Must(t, fr.UpdateAccount(trietest.Addr(i), trietest.Acc(uint64(i), 9)), "UpdateAccount")
		}
		trietest.Must(t, db.Persist(fr, 10), "Persist")
		rep, err := db.Begin().CheckState(context.Background(), nil)
		trietest.Must(t, err, "CheckState")
		trietest.Must(t, rep.Err(), "CheckState right after a Persist")
		trietest.Must(t, db.Persist(db.Begin(), 11), "Persist")
		rep, err = db.Check(context.Background(), nil)
		trietest.Must(t, err, "Check")
		trietest.Must(t, rep.Err(), "Check right after a Persist")
	})
}

// checkedDB returns a database of format f on the memory backend holding the
// checked test state of 300 accounts; the test's cleanup closes it.
func checkedDB(t *testing.T, f vertex.Format) *trie.DB {
	t.Helper()
	db, err := trie.Open(trie.NewMemoryBackend(), &trie.Options{Format: f})
	trietest.Must(t, err, "Open")
	t.Cleanup(func() { db.Close() })
	trietest.CheckedState(t, db, 300)
	return db
}
