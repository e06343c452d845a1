package trie

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie/internal/build"
	"github.com/hexstate/hexstate/vertex"
)

// A copy of a scattered source too large to preload is rebuilt from the
// source's leaf index.
//
// The walk reads the source in key order. Where the source's IDs were
// handed out as its vertices appeared (a store grown block by block) that
// order is random in ID: every vertex costs a seek and, once the source no
// longer fits its block cache, a data block read and decompressed for one
// record of ~50 bytes: several times the time of reading the source in ID
// order and writing the records (docs/benchmarks.md §7). The preload
// (copy_preload.go) avoids that only for a source that fits in memory.
//
// The leaf index (docs/format.md §10) holds every account and slot of the
// persisted state keyed by its hash: it is the state's leaves already in
// trie order, read by one sequential scan. The trie is a function of its
// leaves, so the builder every load uses (build.Builder) makes from them
// the very records the walk would have copied, IDs included, and computes
// every key on the way: one Keccak-256 per vertex instead of a random read,
// several times cheaper. The rebuilt root is
// compared with the source's before anything is committed: equal roots
// mean every leaf and every key is the source's, which checks more than
// the walk's copy of stored keys does; a leaf index that does not match its
// trie stops the copy with ErrCopy and leaves the target empty.
//
// A storage trie is built as its slots stream in, so memory does not grow
// with a contract's storage either. The source's index must be complete
// (its marker present; DB.HasLeafIndex).

// CopyMethod selects how DB.CopyFrom reads the source.
type CopyMethod int

const (
	// CopyAuto scans a format-v1 source laid out by the builder into a
	// format-v2 target (CopyScan; a source the scan finds out of order is
	// then walked from the start), and otherwise walks the source's trie,
	// unless the source is scattered (not laid out by the builder), too
	// large to preload (CopyOptions.PreloadBytes) and has a leaf index:
	// then it rebuilds.
	CopyAuto CopyMethod = iota
	// CopyWalk walks the source's trie and copies its records and keys.
	CopyWalk
	// CopyRebuild builds the target from the source's leaf index and
	// checks the root it computes against the source's. A source without
	// a leaf index, or a resumed walk, is refused with ErrCopy.
	CopyRebuild
	// CopyScan copies a format-v1 source laid out by the builder into a
	// format-v2 target by one sequential scan of the source's IDs
	// (copy_scan.go): the walk's records, without its reads in trie order.
	// Any other source, or one found out of the builder's order, is
	// refused with ErrCopy.
	CopyScan
)

// rebuildCtxEvery is how many slots of one account a rebuild reads between
// two checks of its context (each account checks it at its safe point).
const rebuildCtxEvery = 4096

// rebuild builds the target from the source's leaf index and commits it
// when its root is the source's.
func (c *copier) rebuild() (hashkey.Hash, error) {
	c.rebuilding = true
	r := rebuilder{c: c}
	r.accts = build.New(c.db.format, &c.alloc, &c.enc, c.emitVertex)
	r.slots = build.New(c.db.format, &c.alloc, &c.enc, c.emitVertex)
	r.accts.Reset(vertex.RootID, 0)
	var start []byte
	if st := c.resumeRebuild; st != nil {
		start = st[:32]
		if rest, err := r.accts.RestoreState(st[32:]); err != nil || len(rest) != 0 {
			return hashkey.Hash{}, fmt.Errorf("%w: resume state: %w", ErrCopy, cmp.Or(err, errors.New("trailing bytes")))
		}
	}
	err := c.src.backend.EachLeaf(start, r.add)
	if err == nil {
		err = r.endStorage()
	}
	var k hashkey.Key
	if err == nil {
		_, k, err = r.accts.Finish()
	}
	if err != nil {
		c.wait()
		return hashkey.Hash{}, err
	}
	if got := k.Hash(); got != c.want {
		c.wait()
		return hashkey.Hash{}, fmt.Errorf("%w: the source's leaf index gives root %v, not the source's root %v (DB.Check finds where they differ; CopyWalk copies the trie regardless)", ErrCopy, got, c.want)
	}
	return c.commit()
}

// rebuilder feeds the builders with the source's leaf-index entries, in key
// order: an account's entry, then its slots' entries.
type rebuilder struct {
	c            *copier
	accts, slots *build.Builder
	acct         []byte      // the key of the last account added
	inStorage    bool        // its storage trie is being built
	nib          []byte      // scratch: a key's nibbles
	s            leafScratch // the entry being read, decoded
	slotsRead    int         // slots of the open storage trie read
}

// add adds one leaf-index entry (EachLeaf's callback).
func (r *rebuilder) add(key, val []byte) error {
	if bytes.Equal(key, leafMarkerKey) {
		return nil
	}
	if err := decodeLeafEntry(&r.s, key, val); err != nil {
		return fmt.Errorf("%w: the source's %w", ErrCopy, err)
	}
	if len(key) == 32 {
		if err := r.endStorage(); err != nil {
			return err
		}
		if err := r.c.safePoint(func() copyState { return r.state(key) }); err != nil {
			return err
		}
		r.acct = append(r.acct[:0], key...)
		r.c.at = binary.BigEndian.Uint64(key)
		r.nib = hashkey.AppendNibbles(r.nib[:0], key)
		return r.accts.Add(r.nib, vertex.AccountPayload, nil, &r.s.acc)
	}
	if r.acct == nil || !bytes.Equal(key[:32], r.acct) {
		return fmt.Errorf("%w: the source's leaf index entry %x: %w", ErrCopy, key, &vertex.CorruptError{Reason: "a slot without its account's entry"})
	}
	if !r.inStorage {
		r.inStorage = true
		r.slots.Reset(vertex.NoID, 0) // its top takes an ID after the rest of it
		r.slotsRead = 0
	}
	if r.slotsRead++; r.slotsRead%rebuildCtxEvery == 0 {
		if err := r.c.ctx.Err(); err != nil {
			return fmt.Errorf("trie: copy stopped after %d records: %w", r.c.records, err)
		}
	}
	r.nib = hashkey.AppendNibbles(r.nib[:0], key[32:])
	return r.slots.Add(r.nib, vertex.SlotPayload, r.s.v.Value, nil)
}

// state is the rebuild's resume state before the account of key is added.
func (r *rebuilder) state(key []byte) copyState {
	c := r.c
	return copyState{format: c.db.format, top: c.alloc.Top, records: c.records, rebuild: r.accts.AppendState(slices.Clone(key))}
}

// endStorage finishes the storage trie of the last account added, if it has
// one, and gives the account its ID and root.
func (r *rebuilder) endStorage() error {
	if !r.inStorage {
		return nil
	}
	id, k, err := r.slots.Finish()
	if err != nil {
		return err
	}
	r.accts.SetStorage(id, k.Hash())
	r.inStorage = false
	return nil
}
