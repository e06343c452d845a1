package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// FileName is the journal's file name in its directory. RocksDB ignores files
// whose names it does not know, so the journal can live in a RocksDB
// directory.
const FileName = "hexstate-journal"

// header opens every journal file: magic "hxjn", version 1, three zero bytes.
var header = [8]byte{'h', 'x', 'j', 'n', 1, 0, 0, 0}

var (
	// ErrCorrupt is wrapped when the journal file is not a journal (a foreign
	// header) or a record that passed its checksum does not decode.
	ErrCorrupt = errors.New("journal: corrupt journal")
	// ErrClosed is returned by a Log used after Close.
	ErrClosed = errors.New("journal: closed")
)

// Report says what Open found in the file.
type Report struct {
	Entries      int   // entries read
	Bytes        int64 // bytes of the file kept (header and entries)
	DroppedBytes int64 // bytes of a torn tail dropped (and truncated away)
}

// span is where an entry's record lies in the file.
type span struct {
	off, n      int64
	key, parent Key
}

// Log is an open journal file. The file is created on the first Append.
type Log struct {
	mu     sync.Mutex
	dir    string
	sync   bool
	f      *os.File // nil until the file exists
	size   int64
	index  []span
	buf    []byte
	closed bool
}

// Open reads the journal in dir (none yet is an empty journal) and returns its
// entries in file order, their records aliasing one buffer. With sync, every
// Append and Trim fsyncs before returning.
func Open(dir string, sync bool) (*Log, []Entry, Report, error) {
	l := &Log{dir: dir, sync: sync}
	var rep Report
	_ = os.Remove(l.path() + ".tmp") // a Trim cut short
	data, err := os.ReadFile(l.path())
	if errors.Is(err, fs.ErrNotExist) {
		return l, nil, rep, nil
	}
	if err != nil {
		return nil, nil, rep, fmt.Errorf("journal: %w", err)
	}
	entries, index, off, err := parse(data, l.path())
	if err != nil {
		return nil, nil, rep, err
	}
	l.index = index
	rep = Report{Entries: len(entries), Bytes: off, DroppedBytes: int64(len(data)) - off}
	f, err := os.OpenFile(l.path(), os.O_RDWR, 0)
	if err != nil {
		return nil, nil, rep, fmt.Errorf("journal: %w", err)
	}
	if off == 0 {
		_, err = f.WriteAt(header[:], 0)
		off = int64(len(header))
	}
	if err == nil && rep.DroppedBytes != 0 {
		err = f.Truncate(off)
	}
	if err != nil {
		f.Close()
		return nil, nil, rep, fmt.Errorf("journal: dropping the torn tail of %s: %w", l.path(), err)
	}
	l.f, l.size = f, off
	return l, entries, rep, nil
}

// parse reads the entries of a journal file's bytes data (read from path),
// up to its end or a torn tail, and returns them, where each lies, and the
// offset where the intact part ends (0 for a header cut short).
func parse(data []byte, path string) ([]Entry, []span, int64, error) {
	var entries []Entry
	var index []span
	if len(data) < len(header) {
		return nil, nil, 0, nil // a creation cut short
	}
	if [8]byte(data[:8]) != header {
		return nil, nil, 0, fmt.Errorf("%w: %s does not start with a journal header (%q)", ErrCorrupt, path, data[:8])
	}
	off := int64(len(header))
	for {
		rest := data[off:]
		if len(rest) < recHeader {
			break
		}
		n := int64(binary.BigEndian.Uint32(rest))
		if n > int64(len(rest)-recHeader) || n >= maxRecBody {
			break
		}
		body := rest[recHeader : recHeader+n]
		if crc32.Checksum(body, crcTable) != binary.BigEndian.Uint32(rest[4:]) {
			break
		}
		e, err := decodeBody(body)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("journal: entry at offset %d of %s: %w", off, path, err)
		}
		entries = append(entries, e)
		index = append(index, span{off: off, n: recHeader + n, key: e.Key, parent: e.Parent})
		off += recHeader + n
	}
	return entries, index, off, nil
}

// Pending reads the journal in dir without changing it (no torn tail is cut,
// no file created) and returns the keys of the entries that descend from
// the state base, in file order: the frames a replay onto base would
// recover. No journal is an empty one.
func Pending(dir string, base Key) ([]Key, error) {
	path := filepath.Join(dir, FileName)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	_, index, _, err := parse(data, path)
	if err != nil {
		return nil, err
	}
	var keys []Key
	for _, i := range descendants(index, base) {
		keys = append(keys, index[i].key)
	}
	return keys, nil
}

func (l *Log) path() string { return filepath.Join(l.dir, FileName) }

// Path returns the journal file's path.
func (l *Log) Path() string { return l.path() }

// Size returns the bytes of the journal file (0 before the first Append).
func (l *Log) Size() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.size
}

// Append writes e at the end of the journal (and fsyncs it with sync). On an
// error the file is cut back to where it was, as far as that works; a record
// cut short by a crash is a torn tail that Open drops.
func (l *Log) Append(e *Entry) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if l.f == nil {
		f, err := os.OpenFile(l.path(), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return fmt.Errorf("journal: %w", err)
		}
		if _, err := f.Write(header[:]); err != nil {
			f.Close()
			return fmt.Errorf("journal: %w", err)
		}
		l.f, l.size = f, int64(len(header))
	}
	l.buf = appendRecord(l.buf[:0], e)
	if _, err := l.f.WriteAt(l.buf, l.size); err != nil {
		_ = l.f.Truncate(l.size)
		return fmt.Errorf("journal: append: %w", err)
	}
	if l.sync {
		if err := l.f.Sync(); err != nil {
			_ = l.f.Truncate(l.size)
			return fmt.Errorf("journal: sync: %w", err)
		}
	}
	l.index = append(l.index, span{off: l.size, n: int64(len(l.buf)), key: e.Key, parent: e.Parent})
	l.size += int64(len(l.buf))
	if cap(l.buf) > 16<<20 {
		l.buf = nil // do not keep a huge buffer after a huge entry
	}
	return nil
}

// Trim drops every entry that does not descend from the state base (through
// parent links; base itself is dropped), by writing the kept entries to a new
// file and renaming it over the journal. The caller must only trim to a state
// the store holds durably. A Trim that fails leaves the journal as it was.
func (l *Log) Trim(base Key) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if l.f == nil || len(l.index) == 0 {
		return nil
	}
	keep := descendants(l.index, base)
	if len(keep) == len(l.index) {
		return nil
	}
	tmp := l.path() + ".tmp"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("journal: trim: %w", err)
	}
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("journal: trim: %w", err)
	}
	kept := make([]span, 0, len(keep))
	size := int64(len(header))
	if _, err := f.Write(header[:]); err != nil {
		return fail(err)
	}
	for _, i := range keep {
		s := l.index[i]
		if cap(l.buf) < int(s.n) {
			l.buf = make([]byte, s.n)
		}
		b := l.buf[:s.n]
		if _, err := l.f.ReadAt(b, s.off); err != nil {
			return fail(err)
		}
		if _, err := f.Write(b); err != nil {
			return fail(err)
		}
		kept = append(kept, span{off: size, n: s.n, key: s.key, parent: s.parent})
		size += s.n
	}
	if l.sync {
		if err := f.Sync(); err != nil {
			return fail(err)
		}
	}
	if err := os.Rename(tmp, l.path()); err != nil {
		return fail(err)
	}
	if l.sync {
		if d, err := os.Open(l.dir); err == nil {
			_ = d.Sync()
			d.Close()
		}
	}
	l.f.Close()
	l.f, l.size, l.index = f, size, kept
	if cap(l.buf) > 16<<20 {
		l.buf = nil
	}
	return nil
}

// descendants returns, in file order, the indexes of the entries of index
// that descend from base through parent links (the first entry of a key wins;
// later entries of the same key are duplicates and left out).
func descendants(index []span, base Key) []int {
	children := make(map[Key][]int)
	for i, s := range index {
		children[s.parent] = append(children[s.parent], i)
	}
	seen := map[Key]bool{base: true}
	var keep []int
	queue := []Key{base}
	for len(queue) > 0 {
		k := queue[0]
		queue = queue[1:]
		for _, i := range children[k] {
			if seen[index[i].key] {
				continue
			}
			seen[index[i].key] = true
			keep = append(keep, i)
			queue = append(queue, index[i].key)
		}
	}
	slices.Sort(keep)
	return keep
}

// Close closes the file. Calling it again returns nil.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	if l.f == nil {
		return nil
	}
	return l.f.Close()
}
