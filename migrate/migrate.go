package migrate

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie"
)

// VerifyMode selects how much Run checks after the copy.
type VerifyMode int

const (
	// VerifySample checks the root, the record count and proofs of a sample
	// of accounts and slots (the default).
	VerifySample VerifyMode = iota
	// VerifyFull also recomputes every key of the target from its leaves.
	VerifyFull
)

// Options tunes a migration. The zero value is valid.
type Options struct {
	// CheckpointRecords is about how many records are copied between two
	// checkpoints; default 1<<20.
	CheckpointRecords int
	// Verify selects the verification; default VerifySample.
	Verify VerifyMode
	// Samples is how many accounts (and as many slots) the verification
	// proves; default 2000.
	Samples int
	// Progress, when set, is called after every batch written and at the
	// start and end of the verification.
	Progress func(Progress)
	// LeafIndex gives the target a leaf index after the verification: the
	// source's, copied (trie.DB.CopyLeafIndex: the index does not depend on
	// the layout), when the source has one, else one built from the target's
	// trie (trie.DB.BuildLeafIndex). A copy of the records alone leaves the
	// target without one, which reads correctly but walks the trie for every
	// cold lookup.
	LeafIndex bool
	// PreloadBytes is trie.CopyOptions.PreloadBytes: the memory within
	// which a source not laid out by the builder is read into memory before
	// the copy's walk (0: trie's default, negative: never).
	PreloadBytes int
	// Method is trie.CopyOptions.Method: how the source is read (by
	// default its trie is walked, unless it is scattered and too large to
	// preload, and has a leaf index to rebuild the target from).
	Method trie.CopyMethod
}

// Progress reports how far a migration got.
type Progress struct {
	Phase    string        // "copy", "verify" or "leaf index"
	Records  uint64        // records written, this run and earlier ones
	Bytes    uint64        // bytes of records written by this run
	Fraction float64       // estimated share of the copy done
	Elapsed  time.Duration // since this run started
}

// Result describes a finished migration.
type Result struct {
	Root    hashkey.Hash  // the state root, the source's and the target's
	Records uint64        // vertex records in the target
	Bytes   uint64        // bytes of records written by this run
	Proofs  int           // account and slot proofs verified
	Resumed bool          // the run continued an interrupted one's progress (a checkpointed copy, or a committed one to verify)
	Copy    time.Duration // time spent copying, until the copy was committed
	// ReadAhead, Scanned and Preloaded are trie.CopyProgress's of this
	// run's copy: the source records its workers read ahead of the walk,
	// those of them read by sequential scans, and the records read into
	// memory before the walk (0 for a run that only verified).
	ReadAhead, Scanned, Preloaded uint64
	// Rebuilt says the target was built from the source's leaf index, its
	// keys computed, rather than copied (trie.CopyProgress.Rebuilt).
	Rebuilt bool
	// SourceScanned says the source was copied by one sequential scan of
	// its IDs (trie.CopyProgress.SourceScanned).
	SourceScanned bool
	Verify        time.Duration // time spent verifying
	// Compact is the time from the commit until the target was compacted into
	// its final shape: the compaction runs beside the verification and the
	// leaf index (Run waits for it before it returns).
	Compact time.Duration

	LeafEntries uint64        // entries of the target's leaf index (Options.LeafIndex)
	LeafIndex   time.Duration // time spent copying or building it
	LeafCopied  bool          // the index was copied from the source's, not built
}

// ErrRootMismatch is returned when the migrated state's root differs from the
// source's: the target must not be used.
var ErrRootMismatch = errors.New("migrate: migrated state root differs from the source")

// ErrTargetNotEmpty is returned, before anything is written, for a target
// that holds a state and no checkpoint of an interrupted migration.
var ErrTargetNotEmpty = errors.New("migrate: target is not empty")

// ErrVerify is wrapped by every verification failure: the target must not be
// used.
var ErrVerify = errors.New("migrate: verification failed")

// Run copies the persisted state of src into dst, which must be empty or hold
// an earlier interrupted run of the same migration (whose checkpoint file is
// in checkpointDir), verifies it and returns what it did. src must not be
// written to meanwhile (cmd/trie-migrate opens it read-only). The copy is
// committed at src.Block(). Run leaves the checkpoint in place: the target
// becomes a database only when Finish closes it and removes the checkpoint, so
// that a run stopped before then (even after Run returned) is resumed by the
// next one, which verifies again.
func Run(ctx context.Context, src, dst *trie.DB, checkpointDir string, opts Options) (Result, error) {
	var res Result
	want, err := src.StateRoot()
	if err != nil {
		return res, err
	}
	cp, resumed, err := readCheckpoint(checkpointDir)
	if err != nil {
		return res, err
	}
	if resumed && cp.srcRoot != want {
		return res, fmt.Errorf("migrate: checkpoint is for source root %v, source is now %v: remove the target and start again", cp.srcRoot, want)
	}
	if !resumed {
		if r, err := dst.StateRoot(); err != nil || r != hashkey.EmptyRoot || dst.Block() != 0 {
			if err == nil {
				err = fmt.Errorf("%w: target is not empty (root %v, block %d) and has no checkpoint", ErrTargetNotEmpty, r, dst.Block())
			}
			return res, err
		}
		// Checkpoint before the first write, so that a run interrupted before
		// its first checkpoint is recognised as ours and started again.
		cp.srcRoot = want
		if err := writeCheckpoint(checkpointDir, &cp); err != nil {
			return res, err
		}
	}
	if resumed && !cp.done {
		// The copy may have committed (the target holds the source's root at
		// its block) with the run stopped before recording it, e.g. while the
		// commit compacted the store: then only the verification is left, and
		// the target's record count stands in for the count copied.
		if r, err := dst.StateRoot(); err == nil && r == want && dst.Block() == src.Block() {
			n, err := dst.RecordCount()
			if err != nil {
				return res, err
			}
			cp.done, cp.state = true, binary.BigEndian.AppendUint64(nil, n)
			if err := writeCheckpoint(checkpointDir, &cp); err != nil {
				return res, err
			}
		}
	}
	// A checkpoint without progress (Create's, or Run's own before its
	// first) resumes nothing: the copy starts again.
	res.Resumed = cp.done || cp.state != nil
	start := time.Now()
	report := func(p Progress) {
		if opts.Progress != nil {
			p.Elapsed = time.Since(start)
			opts.Progress(p)
		}
	}
	var records uint64
	// copying is CopyFrom's result once the copy is committed: its
	// compaction of the target runs beside what follows, and every return
	// from here on waits for it (the caller closes dst after Run).
	type copied struct {
		err error
		at  time.Time // when CopyFrom returned
	}
	var copying chan copied
	var committedAt time.Time
	finishCopy := func() error {
		if copying == nil {
			return nil
		}
		c := <-copying
		copying = nil
		res.Compact = c.at.Sub(committedAt)
		if c.err != nil {
			return fmt.Errorf("migrate: compacting the copied target: %w", c.err)
		}
		return nil
	}
	defer func() { _ = finishCopy() }()
	if !cp.done {
		committed := make(chan trie.CopyProgress, 1)
		copts := trie.CopyOptions{Block: src.Block(), Resume: cp.state, CheckpointRecords: opts.CheckpointRecords, PreloadBytes: opts.PreloadBytes, Method: opts.Method,
			Checkpoint: func(state []byte, _ trie.CopyProgress) error {
				cp.state = state
				return writeCheckpoint(checkpointDir, &cp)
			},
			Progress: func(p trie.CopyProgress) {
				report(Progress{Phase: "copy", Records: p.Records, Bytes: p.Bytes, Fraction: p.Fraction})
			},
			Committed: func(p trie.CopyProgress) { committed <- p }}
		if len(cp.state) == 0 {
			copts.Resume = nil
		}
		done := make(chan copied, 1)
		go func() {
			_, err := dst.CopyFrom(ctx, src, copts)
			done <- copied{err, time.Now()}
		}()
		select {
		case p := <-committed:
			records, res.Bytes, res.ReadAhead, res.Scanned, res.Preloaded, res.Rebuilt, res.SourceScanned = p.Records, p.Bytes, p.ReadAhead, p.Scanned, p.Preloaded, p.Rebuilt, p.SourceScanned
			copying, committedAt = done, time.Now()
		case c := <-done:
			if errors.Is(c.err, trie.ErrCopyVersion) { // a rerun would meet the same checkpoint
				return res, fmt.Errorf("migrate: the target %s holds the checkpoint of an earlier trie-migrate: %w", checkpointDir, c.err)
			}
			return res, fmt.Errorf("migrate: copying (run again to resume): %w", c.err)
		}
		// The copy is committed: a run from now on only verifies.
		cp.done, cp.state = true, binary.BigEndian.AppendUint64(nil, records)
		if err := writeCheckpoint(checkpointDir, &cp); err != nil {
			return res, err
		}
	} else if len(cp.state) == 8 {
		records = binary.BigEndian.Uint64(cp.state)
	} else {
		return res, fmt.Errorf("%w: a finished copy's checkpoint without its record count", ErrCheckpoint)
	}
	res.Copy = time.Since(start)
	report(Progress{Phase: "verify", Records: records, Bytes: res.Bytes, Fraction: 1})
	vstart := time.Now()
	n, err := verify(ctx, src, dst, want, records, &opts)
	res.Verify, res.Proofs, res.Root, res.Records = time.Since(vstart), n, want, records
	if err != nil {
		return res, err
	}
	if opts.LeafIndex {
		report(Progress{Phase: "leaf index", Records: records, Bytes: res.Bytes, Fraction: 1})
		istart := time.Now()
		if res.LeafCopied = src.HasLeafIndex(); res.LeafCopied {
			res.LeafEntries, err = dst.CopyLeafIndex(ctx, src)
		} else {
			res.LeafEntries, err = dst.BuildLeafIndex(ctx)
		}
		if err != nil {
			return res, fmt.Errorf("migrate: giving the target its leaf index (run again to resume): %w", err)
		}
		res.LeafIndex = time.Since(istart)
	}
	return res, finishCopy()
}

// Finish ends a migration that Run completed: it closes dst (flushing it) and
// only then removes the checkpoint in checkpointDir, making the target a
// database of its own. Call it only after Run returned no error; a stop at
// any moment before it returns leaves a target the next Run resumes.
func Finish(dst *trie.DB, checkpointDir string) error {
	if err := dst.Close(); err != nil {
		return fmt.Errorf("migrate: closing the target: %w", err)
	}
	if err := os.Remove(Checkpoint(checkpointDir)); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("migrate: removing the checkpoint: %w", err)
	}
	return syncDir(checkpointDir)
}
