package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/hexstate/hexstate/hashkey"
)

// The builds stream accounts in trie order (by keccak of the address), which
// is not index order. The order is computed once into a file of (hash, index)
// records in dir, by an external bucket sort (256 buckets by the hash's first
// byte, each sorted in memory), so memory stays small at any state size.

const idxRecord = 32 + 4

// indexPath is the sorted index file of shape s in dir.
func indexPath(dir string, s scaleShape) string {
	return filepath.Join(dir, fmt.Sprintf("accounts-seed%d-n%d.idx", s.seed, s.accounts))
}

// ensureIndex writes the sorted index of s unless it exists.
func ensureIndex(dir string, s scaleShape) (string, error) {
	path := indexPath(dir, s)
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	tmp, err := os.MkdirTemp(dir, "index-")
	if err != nil {
		return "", fmt.Errorf("index: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := writeBuckets(tmp, s); err != nil {
		return "", fmt.Errorf("index: buckets: %w", err)
	}
	if err := mergeBuckets(tmp, path+".tmp"); err != nil {
		return "", fmt.Errorf("index: sort: %w", err)
	}
	return path, os.Rename(path+".tmp", path)
}

func bucketPath(dir string, b int) string { return filepath.Join(dir, fmt.Sprintf("b%03d", b)) }

// writeBuckets appends every account's record to the bucket of its first byte.
func writeBuckets(dir string, s scaleShape) (err error) {
	files := make([]*os.File, 256)
	ws := make([]*bufio.Writer, 256)
	defer func() {
		for b, f := range files {
			if f == nil {
				continue
			}
			if e := ws[b].Flush(); err == nil {
				err = e
			}
			if e := f.Close(); err == nil {
				err = e
			}
		}
	}()
	for b := range files {
		if files[b], err = os.Create(bucketPath(dir, b)); err != nil {
			return err
		}
		ws[b] = bufio.NewWriterSize(files[b], 32<<10)
	}
	var rec [idxRecord]byte
	for i := range s.accounts {
		h := s.addrHash(i)
		copy(rec[:32], h[:])
		binary.BigEndian.PutUint32(rec[32:], uint32(i))
		if _, err := ws[h[0]].Write(rec[:]); err != nil {
			return err
		}
	}
	return nil
}

// mergeBuckets sorts each bucket and concatenates them, in order, into out.
func mergeBuckets(dir, out string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for b := range 256 {
		data, err := os.ReadFile(bucketPath(dir, b))
		if err != nil {
			f.Close()
			return err
		}
		recs := make([][]byte, 0, len(data)/idxRecord)
		for off := 0; off < len(data); off += idxRecord {
			recs = append(recs, data[off:off+idxRecord])
		}
		slices.SortFunc(recs, func(a, b []byte) int { return bytes.Compare(a[:32], b[:32]) })
		for k, r := range recs {
			if k > 0 && bytes.Equal(recs[k-1][:32], r[:32]) {
				f.Close()
				return fmt.Errorf("two accounts with hash %x", r[:32])
			}
			if _, err := w.Write(r); err != nil {
				f.Close()
				return err
			}
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// indexReader streams the sorted index: Next returns accounts in trie order.
type indexReader struct {
	f   *os.File
	r   *bufio.Reader
	rec [idxRecord]byte
}

func openIndex(path string) (*indexReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	return &indexReader{f: f, r: bufio.NewReaderSize(f, 1<<20)}, nil
}

// Next returns the next account's hash and index; ok is false at the end.
func (x *indexReader) Next() (h hashkey.Hash, idx int, ok bool, err error) {
	if _, err := io.ReadFull(x.r, x.rec[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return h, 0, false, nil
		}
		return h, 0, false, fmt.Errorf("index: %w", err)
	}
	copy(h[:], x.rec[:32])
	return h, int(binary.BigEndian.Uint32(x.rec[32:])), true, nil
}

func (x *indexReader) Close() error { return x.f.Close() }

// sortedSlots returns contract i's initial slots sorted by slot hash.
func sortedSlots(s scaleShape, i int) []scaleSlot {
	n := s.slotCount(i)
	out := make([]scaleSlot, n)
	for j := range out {
		k := s.slotKey(i, j)
		out[j] = scaleSlot{hash: hashkey.Keccak256(k[:]), val: s.slotValue(i, j)}
	}
	slices.SortFunc(out, func(a, b scaleSlot) int { return bytes.Compare(a.hash[:], b.hash[:]) })
	return out
}
