package rocks

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
	"unsafe"

	"github.com/hexstate/hexstate/vertex"
	"github.com/linxGnu/grocksdb"
)

// TestNativeIteratorLayout guards nativeIterator's assumption about
// grocksdb.Iterator: one pointer field, nothing else.
func TestNativeIteratorLayout(t *testing.T) {
	if got := unsafe.Sizeof(grocksdb.Iterator{}); got != unsafe.Sizeof(uintptr(0)) {
		t.Fatalf("grocksdb.Iterator is %d bytes, want one pointer: nativeIterator must change with the grocksdb version", got)
	}
}

// TestNativeHandleLayout guards the assumption of Vertices and the ingest
// path about grocksdb's DB, ReadOptions and ColumnFamilyHandle: the native
// pointer is each struct's first field.
func TestNativeHandleLayout(t *testing.T) {
	for _, v := range []any{grocksdb.DB{}, grocksdb.ReadOptions{}, grocksdb.ColumnFamilyHandle{}} {
		typ := reflect.TypeOf(v)
		if f := typ.Field(0); f.Name != "c" || f.Type.Kind() != reflect.Pointer || f.Offset != 0 {
			t.Fatalf("grocksdb.%s's first field is %s %v: the native pointer must be read another way for this grocksdb version", typ.Name(), f.Name, f.Type)
		}
	}
}

// TestVertexRangeSeesWrites checks that a pooled iterator never serves a
// record older than the last Write, and that records larger than the scan
// buffer, and a range cut short by fn, come back whole.
func TestVertexRangeSeesWrites(t *testing.T) {
	s := mustOpen(t, t.TempDir(), nil)
	big := bytes.Repeat([]byte{7}, 10000) // larger than scanRange's first buffer
	write := func(recs map[vertex.ID][]byte, dels ...vertex.ID) {
		t.Helper()
		var b vertex.Batch
		for id, r := range recs {
			b.Puts = append(b.Puts, vertex.Record{ID: id, Rec: r})
		}
		b.Deletes = dels
		mustWrite(t, s, &b)
	}
	read := func() map[vertex.ID]string {
		t.Helper()
		got := map[vertex.ID]string{}
		if err := s.VertexRange(16, 16, func(id vertex.ID, rec []byte) error {
			got[id] = string(rec)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	write(map[vertex.ID][]byte{16: []byte("a"), 17: big, 31: []byte("z"), 32: []byte("out")})
	if got := read(); len(got) != 3 || got[16] != "a" || got[17] != string(big) || got[31] != "z" {
		t.Fatalf("first read: %d records %q", len(got), got[16])
	}
	write(map[vertex.ID][]byte{16: []byte("b"), 20: []byte("new")}, 31)
	if got := read(); len(got) != 3 || got[16] != "b" || got[20] != "new" || got[31] != "" {
		t.Fatalf("after a write the range read %q", got)
	}
	stop := errors.New("stop")
	n := 0
	err := s.VertexRange(16, 16, func(vertex.ID, []byte) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("fn's error: got %v after %d calls, want stop after 1", err, n)
	}
}
