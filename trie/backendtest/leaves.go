package backendtest

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/hexstate/hexstate/trie"
	"github.com/hexstate/hexstate/vertex"
)

// The leaf index part of the contract: Leaf, Leaves, EachLeaf, and a batch's
// LeafReset, LeafPrefixDeletes and Leaves applied in that order, atomically
// with its records.

// leafKey returns a key of n bytes: prefix p then the byte s.
func leafKey(n int, p, s byte) []byte {
	k := bytes.Repeat([]byte{p}, n)
	k[n-1] = s
	return k
}

// leafDump returns the index as "key=val" lines, in EachLeaf's order.
func leafDump(t *testing.T, b trie.Backend, start []byte) string {
	t.Helper()
	var out bytes.Buffer
	var last []byte
	err := b.EachLeaf(start, func(k, v []byte) error {
		if last != nil && bytes.Compare(last, k) >= 0 {
			t.Errorf("EachLeaf: key %x after %x", k, last)
		}
		last = bytes.Clone(k)
		fmt.Fprintf(&out, "%x=%s\n", k, v)
		return nil
	})
	if err != nil {
		t.Fatalf("EachLeaf: %v", err)
	}
	return out.String()
}

func testLeaves(t *testing.T, b trie.Backend) {
	acct := leafKey(32, 0xaa, 0xaa)
	slot1, slot2 := append(bytes.Clone(acct), leafKey(32, 1, 1)...), append(bytes.Clone(acct), leafKey(32, 2, 2)...)
	other := append(leafKey(32, 0xab, 0xab), leafKey(32, 1, 1)...)
	mustWrite(t, b, &vertex.Batch{Puts: recs(1, "one"), Leaves: []vertex.LeafEntry{
		{Key: acct, Val: []byte("A")}, {Key: slot1, Val: []byte("s1")}, {Key: slot2, Val: []byte("s2")},
		{Key: other, Val: []byte("o")}, {Key: []byte("marker"), Val: []byte("m")},
	}})
	if v, err := b.Leaf(slot1); err != nil || string(v) != "s1" {
		t.Fatalf("Leaf(slot1) = %q, %v", v, err)
	}
	if v, err := b.Leaf(leafKey(32, 9, 9)); err != nil || v != nil {
		t.Fatalf("Leaf(absent) = %q, %v; want nil, nil", v, err)
	}
	var got []string
	err := b.Leaves([][]byte{slot2, leafKey(64, 9, 9), acct}, func(i int, v []byte) error {
		got = append(got, fmt.Sprintf("%d:%s:%v", i, v, v == nil))
		return nil
	})
	if want := []string{"0:s2:false", "1::true", "2:A:false"}; err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Leaves = %v, %v; want %v", got, err, want)
	}
	if d := leafDump(t, b, slot1); d != fmt.Sprintf("%x=s1\n%x=s2\n%x=o\n", slot1, slot2, other) {
		t.Fatalf("EachLeaf from slot1:\n%s", d)
	}
	// A prefix delete takes the account's slots, not the account nor another
	// account's slots; the puts after it land; a nil value deletes.
	mustWrite(t, b, &vertex.Batch{LeafPrefixDeletes: [][]byte{acct}, Leaves: []vertex.LeafEntry{
		{Key: slot2, Val: []byte("s2'")}, {Key: other},
	}})
	if d := leafDump(t, b, nil); d != fmt.Sprintf("6d61726b6572=m\n%x=A\n%x=s2'\n", acct, slot2) {
		t.Fatalf("after the prefix delete:\n%s", d)
	}
	// A reset empties the index (before the batch's puts) and leaves records alone.
	mustWrite(t, b, &vertex.Batch{LeafReset: true, Leaves: []vertex.LeafEntry{{Key: other, Val: []byte("o'")}}})
	if d := leafDump(t, b, nil); d != fmt.Sprintf("%x=o'\n", other) {
		t.Fatalf("after the reset:\n%s", d)
	}
	if r, err := b.Vertex(1); err != nil || string(r) != "one" {
		t.Fatalf("Vertex(1) after a leaf reset = %q, %v", r, err)
	}
	stop := fmt.Errorf("stop")
	if err := b.EachLeaf(nil, func(k, v []byte) error { return stop }); err != stop {
		t.Fatalf("EachLeaf's fn error: got %v", err)
	}
	before := b.Stats().LeafReads
	b.Leaf(acct)
	b.Leaves([][]byte{acct, slot1}, func(int, []byte) error { return nil })
	if d := b.Stats().LeafReads - before; d != 3 {
		t.Fatalf("LeafReads grew by %d for 3 keys", d)
	}
}
