package trie

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/vertex"
)

// TestCopyStateHeld round-trips a walk's state (in both formats: v1 frames
// carry their children's IDs, v2 frames their records) and a rebuild's state
// with held records, refuses the states of earlier versions with
// ErrCopyVersion, and refuses held records that do not fit the state.
func TestCopyStateHeld(t *testing.T) {
	held := []vertex.Record{{ID: 3, Rec: []byte{1, 2, 3}}, {ID: 17, Rec: bytes.Repeat([]byte{9}, 300)}}
	frame := copyFrame{src: 1, nib: 4, done: 1<<2 | 1<<9}
	frame.recs[2], frame.recs[9] = []byte{4, 5, 6}, bytes.Repeat([]byte{8}, 200)
	frame.keys[2] = hashkey.KeyOf(bytes.Repeat([]byte{7}, 40))
	frame.keys[9] = hashkey.KeyOf([]byte{7})
	frame1 := copyFrame{src: 1, nib: 4, done: 1 << 2}
	frame1.kids[2] = 5
	frame1.keys[2] = frame.keys[2]
	walk := copyState{format: vertex.FormatV2, top: 40, records: 12, held: held, frames: []copyFrame{frame}}
	walk1 := copyState{format: vertex.FormatV1, top: 40, records: 12, held: held, frames: []copyFrame{frame1}}
	rebuild := copyState{format: vertex.FormatV2, top: 40, records: 12, held: held, rebuild: bytes.Repeat([]byte{5}, 40)}
	for _, st := range []copyState{walk, walk1, rebuild} {
		b := st.encode()
		got, err := decodeCopyState(b)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if !reflect.DeepEqual(got, st) {
			t.Fatalf("decoded %+v, want %+v", got, st)
		}
		for _, m := range oldStateMagics {
			old := append(append([]byte(nil), m...), b[len(copyStateMagic):]...)
			if _, err := decodeCopyState(old); !errors.Is(err, ErrCopyVersion) || !errors.Is(err, ErrCopy) {
				t.Fatalf("a state of version %q: %v, want ErrCopyVersion", m, err)
			}
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
	for _, st := range []copyState{walk, walk1} {
		b := st.encode()
		for n := len(copyStateMagic) + 17; n < len(b); n++ {
			if _, err := decodeCopyState(b[:n]); !errors.Is(err, ErrCopy) {
				t.Fatalf("%v: truncated to %d bytes: %v, want ErrCopy", st.format, n, err)
			}
		}
	}
}
