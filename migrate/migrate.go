package migrate

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/hexstate/hexstate/trie"
)

// Options tunes a migration. The zero value is valid.
type Options struct {
	// ChunkAccounts is how many accounts are written between two persists (and
	// progress checkpoints) of the target; default 50,000.
	ChunkAccounts int
	// Progress, when set, is called after every chunk.
	Progress func(Progress)
}

// Progress reports how far a migration got.
type Progress struct {
	Accounts uint64       // accounts copied so far (this run and earlier ones)
	Slots    uint64       // storage slots copied so far
	Last     hashkey.Hash // addrHash of the last account copied
	Fraction float64      // estimated share done: keys are uniform, so Last/2^256
	Elapsed  time.Duration
}

// ErrRootMismatch is returned when the migrated state's root differs from the
// source's: the target must not be used.
var ErrRootMismatch = errors.New("migrate: migrated state root differs from the source")

// checkpointName is the file beside the target's data recording the progress of
// an unfinished migration; it is removed when the migration is verified.
const checkpointName = "MIGRATION-IN-PROGRESS"

// Checkpoint is the path of the progress file of a migration into dir.
func Checkpoint(dir string) string { return filepath.Join(dir, checkpointName) }

// Run copies the state of src into dst, which must be empty or hold an earlier
// interrupted run of the same migration (whose checkpoint file is in
// checkpointDir). It returns the verified state root.
//
// Accounts are read in addrHash order from src's persisted state and written in
// chunks; after each chunk is persisted (as block 0), the checkpoint records the
// last account written. The final commit is persisted at src.Block(). Re-writing an account that a crash left written but not checkpointed
// is harmless: the writes are idempotent.
func Run(ctx context.Context, src, dst *trie.DB, checkpointDir string, opts Options) (hashkey.Hash, error) {
	chunk := opts.ChunkAccounts
	if chunk <= 0 {
		chunk = 50_000
	}
	want, err := src.StateRoot()
	if err != nil {
		return hashkey.Hash{}, err
	}
	cp, resumed, err := readCheckpoint(checkpointDir)
	if err != nil {
		return hashkey.Hash{}, err
	}
	if !resumed {
		if r, err := dst.StateRoot(); err != nil || r != hashkey.EmptyRoot {
			if err == nil {
				err = fmt.Errorf("migrate: target is not empty (root %v) and has no checkpoint", r)
			}
			return hashkey.Hash{}, err
		}
		// Checkpoint before the first write, so that a run interrupted before its
		// first chunk is recognised as ours and resumed.
		cp.srcRoot = want
		if err := writeCheckpoint(checkpointDir, &cp); err != nil {
			return hashkey.Hash{}, err
		}
	} else if cp.srcRoot != want {
		return hashkey.Hash{}, fmt.Errorf("migrate: checkpoint is for source root %v, source is now %v: remove the target and start again", cp.srcRoot, want)
	}
	start := time.Now()
	read := src.Begin()
	defer read.Rollback()
	tx := dst.Begin()
	// A resumed run whose checkpoint says every account was copied (or whose last
	// copied account was the highest possible addrHash) has nothing left to copy:
	// it only re-does the final commit and the verification.
	if from, more := cp.next(); more && !(resumed && cp.done) {
		it := read.Accounts(from)
		n := 0
		for it.Next() {
			addr, acc := it.Hash(), it.Account()
			if err := tx.UpdateAccount(addr, acc); err != nil {
				return hashkey.Hash{}, err
			}
			slots := read.StorageSlots(addr, hashkey.Hash{})
			for slots.Next() {
				v := slots.Value()
				if err := tx.UpdateStorage(addr, slots.Hash(), &v); err != nil {
					return hashkey.Hash{}, err
				}
				cp.slots++
			}
			if err := slots.Err(); err != nil {
				return hashkey.Hash{}, fmt.Errorf("migrate: reading storage of %v: %w", addr, err)
			}
			cp.accounts++
			cp.last, cp.started = addr, true
			if n++; n == chunk {
				// Intermediate chunks are persisted as block 0: a half-migrated
				// target must not pass for a database at the source's block.
				if tx, err = commitChunk(dst, tx, &cp, checkpointDir, want, 0); err != nil {
					return hashkey.Hash{}, err
				}
				n = 0
				report(opts.Progress, &cp, start)
				if err := ctx.Err(); err != nil {
					return hashkey.Hash{}, fmt.Errorf("migrate: stopped after %d accounts (run again to resume): %w", cp.accounts, err)
				}
			}
		}
		if err := it.Err(); err != nil {
			return hashkey.Hash{}, fmt.Errorf("migrate: reading accounts: %w", err)
		}
	}
	// A checkpoint marked done was written after the final persist: only the
	// verification is left (persisting the same block again would be refused).
	if !(resumed && cp.done) {
		cp.done = true
		if _, err = commitChunk(dst, tx, &cp, checkpointDir, want, src.Block()); err != nil {
			return hashkey.Hash{}, err
		}
	}
	report(opts.Progress, &cp, start)
	got, err := dst.StateRoot()
	if err != nil {
		return hashkey.Hash{}, err
	}
	if got != want {
		return got, fmt.Errorf("%w: source %v, target %v", ErrRootMismatch, want, got)
	}
	if err := os.Remove(Checkpoint(checkpointDir)); err != nil && !os.IsNotExist(err) {
		return got, err
	}
	return got, nil
}

func commitChunk(dst *trie.DB, tx *trie.Frame, cp *checkpoint, dir string, srcRoot hashkey.Hash, block uint64) (*trie.Frame, error) {
	if err := dst.Persist(tx, block); err != nil {
		return nil, fmt.Errorf("migrate: persisting chunk: %w", err)
	}
	cp.srcRoot = srcRoot
	if err := writeCheckpoint(dir, cp); err != nil {
		return nil, err
	}
	return tx.Begin(), nil
}

func report(fn func(Progress), cp *checkpoint, start time.Time) {
	if fn == nil {
		return
	}
	frac := float64(binary.BigEndian.Uint64(cp.last[:8])) / (1 << 64)
	if cp.done {
		frac = 1
	}
	fn(Progress{Accounts: cp.accounts, Slots: cp.slots, Last: cp.last, Fraction: frac, Elapsed: time.Since(start)})
}

// checkpoint is the content of the progress file:
//
//	"hxmig1" | srcRoot [32] | last [32] | accounts u64 | slots u64 | flags u8
//
// flags bit 0: at least one account copied; bit 1: all accounts copied.
type checkpoint struct {
	srcRoot, last   hashkey.Hash
	accounts, slots uint64
	started, done   bool
}

var checkpointMagic = []byte("hxmig1")

// next is the first addrHash still to copy; more is false when nothing is left
// because the last account copied had the highest addrHash (0xff…ff), whose
// successor would wrap around to zero.
func (c *checkpoint) next() (n hashkey.Hash, more bool) {
	if !c.started {
		return hashkey.Hash{}, true
	}
	n = c.last
	for i := len(n) - 1; i >= 0; i-- { // last + 1
		n[i]++
		if n[i] != 0 {
			return n, true
		}
	}
	return hashkey.Hash{}, false // last was 0xff…ff
}

func readCheckpoint(dir string) (checkpoint, bool, error) {
	var c checkpoint
	b, err := os.ReadFile(Checkpoint(dir))
	if os.IsNotExist(err) {
		return c, false, nil
	}
	if err != nil {
		return c, false, err
	}
	if len(b) != 6+32+32+8+8+1 || !bytes.Equal(b[:6], checkpointMagic) {
		return c, false, fmt.Errorf("migrate: %s is not a migration checkpoint (%d bytes)", Checkpoint(dir), len(b))
	}
	copy(c.srcRoot[:], b[6:38])
	copy(c.last[:], b[38:70])
	c.accounts = binary.BigEndian.Uint64(b[70:])
	c.slots = binary.BigEndian.Uint64(b[78:])
	c.started, c.done = b[86]&1 != 0, b[86]&2 != 0
	return c, true, nil
}

// writeCheckpoint replaces the checkpoint atomically (write, sync, rename).
func writeCheckpoint(dir string, c *checkpoint) error {
	b := append([]byte(nil), checkpointMagic...)
	b = append(b, c.srcRoot[:]...)
	b = append(b, c.last[:]...)
	b = binary.BigEndian.AppendUint64(b, c.accounts)
	b = binary.BigEndian.AppendUint64(b, c.slots)
	flags := byte(0)
	if c.started {
		flags |= 1
	}
	if c.done {
		flags |= 2
	}
	b = append(b, flags)
	tmp := Checkpoint(dir) + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, Checkpoint(dir))
}
