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

// testLeavesMany asks Leaves for 300 keys at once (more than a store may
// look up in one batch), in no order, accounts' and slots' keys mixed,
// present (one with an empty value, some large) and absent, and then with fn
// failing.
func testLeavesMany(t *testing.T, b trie.Backend) {
	big := bytes.Repeat([]byte("leaf"), 2<<10) // 8 KiB
	want := map[string][]byte{}
	var entries []vertex.LeafEntry
	var keys [][]byte
	for n := 0; n < 300; n++ {
		k := leafKey(32, byte(n%251), byte(n))
		if n%3 == 0 {
			k = append(leafKey(32, 0x11, byte(n)), leafKey(32, byte(n%7), byte(n))...)
		}
		keys = append(keys, k)
		if n%5 == 4 {
			continue // absent
		}
		val := []byte(fmt.Sprintf("v%d", n))
		switch {
		case n == 7:
			val = []byte{}
		case n%50 == 1:
			val = big
		}
		want[string(k)] = val
		entries = append(entries, vertex.LeafEntry{Key: k, Val: val})
	}
	mustWrite(t, b, &vertex.Batch{Leaves: entries})
	for i, j := 0, len(keys)-1; i < j; i, j = i+2, j-2 { // out of order
		keys[i], keys[j] = keys[j], keys[i]
	}
	next := 0
	err := b.Leaves(keys, func(i int, v []byte) error {
		if i != next {
			return fmt.Errorf("fn called for index %d, want %d", i, next)
		}
		next++
		w, ok := want[string(keys[i])]
		switch {
		case !ok && v != nil:
			return fmt.Errorf("key %x: %q, want nil for an absent entry", keys[i], v)
		case ok && (v == nil || !bytes.Equal(v, w)):
			return fmt.Errorf("key %x: %d bytes %.16q (nil %v), want %d bytes %.16q", keys[i], len(v), v, v == nil, len(w), w)
		}
		return nil
	})
	if err != nil || next != len(keys) {
		t.Fatalf("Leaves(%d keys): %v after %d calls", len(keys), err, next)
	}
	stop := fmt.Errorf("stop")
	calls := 0
	if err := b.Leaves(keys, func(int, []byte) error { calls++; return stop }); err != stop || calls != 1 {
		t.Fatalf("Leaves with fn failing: %v after %d calls, want its error after 1", err, calls)
	}
}
