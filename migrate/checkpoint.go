package migrate

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hexstate/hexstate/hashkey"
)

// checkpointName is the file beside the target's data recording the progress of
// an unfinished migration; it is removed when the migration is verified.
const checkpointName = "MIGRATION-IN-PROGRESS"

// Checkpoint is the path of the progress file of a migration into dir.
func Checkpoint(dir string) string { return filepath.Join(dir, checkpointName) }

// checkpoint is the content of the progress file:
//
//	"hxmig2" | srcRoot [32] | done u8 | copy state (trie.CopyOptions.Resume; empty: none yet)
//
// done is 1 once the copy is committed: only the verification is left.
type checkpoint struct {
	srcRoot hashkey.Hash
	done    bool
	state   []byte
}

var checkpointMagic = []byte("hxmig2")

// ErrCheckpoint is wrapped by the errors about a checkpoint file that is not
// one of this version's.
var ErrCheckpoint = fmt.Errorf("migrate: bad checkpoint")

// Create makes dir the target of a new migration of a state of root srcRoot,
// with no moment at which an interrupted run (SIGKILL) leaves dir holding
// files but no checkpoint, which the next run would have to refuse as a
// foreign directory: create makes the target's store in dir + ".creating"
// (emptied first: what an interrupted Create left), a checkpoint recording
// no progress is written into it, and it is renamed to dir, which must be
// missing or empty. Run then starts the copy from the beginning.
func Create(dir string, srcRoot hashkey.Hash, create func(dir string) error) error {
	dir = filepath.Clean(dir)
	tmp := dir + ".creating"
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("migrate: creating the target: %w", err)
	}
	if err := create(tmp); err != nil {
		return err
	}
	if err := writeCheckpoint(tmp, &checkpoint{srcRoot: srcRoot}); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("migrate: creating the target: %w", err)
	}
	if err := syncDir(filepath.Dir(dir)); err != nil {
		return fmt.Errorf("migrate: creating the target: %w", err)
	}
	return nil
}

func readCheckpoint(dir string) (checkpoint, bool, error) {
	var c checkpoint
	b, err := os.ReadFile(Checkpoint(dir))
	if os.IsNotExist(err) {
		return c, false, nil
	}
	if err != nil {
		return c, false, fmt.Errorf("migrate: reading the checkpoint: %w", err)
	}
	if len(b) < 6+32+1 || !bytes.Equal(b[:6], checkpointMagic) {
		return c, false, fmt.Errorf("%w: %s is not a checkpoint of this version (%d bytes): remove the target and start again", ErrCheckpoint, Checkpoint(dir), len(b))
	}
	copy(c.srcRoot[:], b[6:38])
	c.done = b[38] == 1
	if len(b) > 39 {
		c.state = b[39:]
	}
	return c, true, nil
}

// writeCheckpoint replaces the checkpoint atomically (write, sync, rename,
// sync the directory).
func writeCheckpoint(dir string, c *checkpoint) error {
	b := append([]byte(nil), checkpointMagic...)
	b = append(b, c.srcRoot[:]...)
	done := byte(0)
	if c.done {
		done = 1
	}
	b = append(b, done)
	b = append(b, c.state...)
	tmp := Checkpoint(dir) + ".tmp"
	if err := writeSynced(tmp, b); err != nil {
		return fmt.Errorf("migrate: writing the checkpoint: %w", err)
	}
	if err := os.Rename(tmp, Checkpoint(dir)); err != nil {
		return fmt.Errorf("migrate: writing the checkpoint: %w", err)
	}
	return syncDir(dir)
}

func writeSynced(name string, b []byte) error {
	f, err := os.Create(name)
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
	return f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
