package trie

import (
	"errors"
	"strings"
	"testing"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie/internal/journal"
	"github.com/hexstate/hexstate/vertex"
)

// TestReplayDecodeErrors: a journalled record that does not decode fails the
// replay with ErrCorruptJournal naming its block, after the records were
// decoded beside each other; an entry that does not descend from the base
// is not decoded at all, and an entry journalled twice is replayed once.
func TestReplayDecodeErrors(t *testing.T) {
	db := fiOpen(t, vertex.FormatV2, 2)
	base := db.baseKey()
	bad := []vertex.Record{{ID: vertex.RootID, Rec: []byte{0xff, 0xff, 0xff}}}
	other := journal.Key{Block: 99, Root: hashkey.Hash{1}}
	entries := []journal.Entry{
		{Key: journal.Key{Block: 7, Root: hashkey.Hash{2}, Top: base.Top}, Parent: other, Puts: bad},
	}
	if err := db.replay(entries); err != nil {
		t.Fatalf("an entry off the base's line: %v, want it left alone", err)
	}
	k := journal.Key{Block: 1, Root: hashkey.Hash{3}, Top: base.Top}
	entries = append(entries, journal.Entry{Key: k, Parent: base, Puts: bad}, journal.Entry{Key: k, Parent: base, Puts: bad})
	if got := replayOrder(entries, base); len(got) != 1 || got[0] != 1 {
		t.Fatalf("replay order %v, want the first of the twice-journalled entry only", got)
	}
	err := db.replay(entries)
	if !errors.Is(err, ErrCorruptJournal) || !strings.Contains(err.Error(), "block 1") {
		t.Fatalf("a record that does not decode: %v, want ErrCorruptJournal for block 1", err)
	}
}
