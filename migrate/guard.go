package migrate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Refusals CheckPaths returns, wrapped with the paths involved.
var (
	// ErrNested: the target is the source, lies inside it, or contains it.
	ErrNested = errors.New("migrate: source and target overlap")
	// ErrBackupExists: the name the source would be moved to (-replace) is taken.
	ErrBackupExists = errors.New("migrate: backup name already exists")
)

// CheckPaths refuses, before anything is written, a target directory that is
// the source, lies inside it or contains it (symbolic links resolved), and,
// when backup is not empty, an existing backup name.
func CheckPaths(src, dst, backup string) error {
	s, err := resolve(src)
	if err != nil {
		return fmt.Errorf("migrate: source %s: %w", src, err)
	}
	d, err := resolve(dst)
	if err != nil {
		return fmt.Errorf("migrate: target %s: %w", dst, err)
	}
	switch {
	case within(d, s):
		return fmt.Errorf("%w: target %s is inside source %s", ErrNested, dst, src)
	case within(s, d):
		return fmt.Errorf("%w: source %s is inside target %s", ErrNested, src, dst)
	}
	if backup != "" {
		if _, err := os.Lstat(backup); err == nil {
			return fmt.Errorf("%w: %s (move it away, or do not use -replace)", ErrBackupExists, backup)
		} else if !os.IsNotExist(err) {
			return fmt.Errorf("migrate: backup name %s: %w", backup, err)
		}
	}
	return nil
}

// resolve returns the absolute path of p with the symbolic links of its
// longest existing prefix resolved.
func resolve(p string) (string, error) {
	p, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	rest := ""
	for {
		r, err := filepath.EvalSymlinks(p)
		if err == nil {
			return filepath.Join(r, rest), nil
		}
		if !os.IsNotExist(err) {
			return "", err
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(p, rest), nil
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

// within reports whether path a is b or lies inside it.
func within(a, b string) bool {
	rel, err := filepath.Rel(b, a)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
