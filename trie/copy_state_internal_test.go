package trie

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/vertex"
)

// TestCopyStateHeld round-trips a walk's and a rebuild's state with held
// records, resumes the states of the version without them, and refuses held
// records that do not fit the state.
func TestCopyStateHeld(t *testing.T) {
	held := []vertex.Record{{ID: 3, Rec: []byte{1, 2, 3}}, {ID: 17, Rec: bytes.Repeat([]byte{9}, 300)}}
	frame := copyFrame{src: 1, nib: 4, done: 1 << 2, base: 2}
	frame.kids[2] = 5
	frame.keys[2] = hashkey.KeyOf(bytes.Repeat([]byte{7}, 40))
	walk := copyState{format: vertex.FormatV2, top: 40, records: 12, held: held, frames: []copyFrame{frame}}
	rebuild := copyState{format: vertex.FormatV2, top: 40, records: 12, held: held, rebuild: bytes.Repeat([]byte{5}, 40)}
	for _, st := range []copyState{walk, rebuild} {
		got, err := decodeCopyState(st.encode())
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if !reflect.DeepEqual(got, st) {
			t.Fatalf("decoded %+v, want %+v", got, st)
		}

		// The version before: the same without the held count.
		st.held = nil
		b := st.encode()
		old := append([]byte(nil), copyStateMagic1...)
		if st.rebuild != nil {
			old = append(old[:0], rebuildStateMagic1...)
		}
		old = append(old, b[len(copyStateMagic):len(copyStateMagic)+17]...)
		old = append(old, b[len(copyStateMagic)+18:]...) // past the count 0
		got, err = decodeCopyState(old)
		if err != nil {
			t.Fatalf("decode the version before: %v", err)
		}
		if got.top != st.top || got.records != st.records || len(got.held) != 0 || !reflect.DeepEqual(got.frames, st.frames) || !bytes.Equal(got.rebuild, st.rebuild) {
			t.Fatalf("the version before decoded as %+v", got)
		}
	}

	for name, st := range map[string]copyState{
		"held at the top": {format: vertex.FormatV2, top: 17, held: held},
		"held NoID":       {format: vertex.FormatV2, top: 40, held: []vertex.Record{{ID: vertex.NoID, Rec: []byte{1}}}},
	} {
		if _, err := decodeCopyState(st.encode()); !errors.Is(err, ErrCopy) {
			t.Errorf("%s: %v, want ErrCopy", name, err)
		}
	}
	b := walk.encode()
	for n := len(copyStateMagic) + 17; n < len(b); n++ {
		if _, err := decodeCopyState(b[:n]); !errors.Is(err, ErrCopy) {
			t.Fatalf("truncated to %d bytes: %v, want ErrCopy", n, err)
		}
	}
}
