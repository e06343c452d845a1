package rocks_test

import (
	"context"
	"testing"

	"github.com/hexstate/hexstate/trie"
)

// checkLeafIndex fails t unless db has a leaf index (when want) that holds
// exactly the persisted state's leaves: after a crash, the index must match
// the records the same atomic batches wrote.
func checkLeafIndex(t *testing.T, k int, db *trie.DB, want bool) {
	t.Helper()
	if db.HasLeafIndex() != want {
		t.Fatalf("kill %d: HasLeafIndex %v, want %v", k, db.HasLeafIndex(), want)
	}
	rep, err := db.Check(context.Background(), nil)
	if err != nil {
		t.Fatalf("kill %d: Check: %v", k, err)
	}
	if !rep.OK() {
		t.Fatalf("kill %d: Check: %v", k, rep.Err())
	}
	if want && db.Block() > 0 && rep.LeafEntries == 0 {
		t.Fatalf("kill %d: block %d with an empty leaf index", k, db.Block())
	}
}
