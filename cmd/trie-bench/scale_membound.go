package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// runMembound is -mode scale with -membound: each implementation runs in a
// child trie-bench of its own (same flags, -impl that implementation only)
// under the membound tool, which drops the page cache and caps the child's
// memory, page cache included, at the limit. Each implementation so starts
// cold and reads from disk what its caches miss, whatever ran before it; the
// children share -dir, its roots file and the results file, as one run's
// implementations do. A child that fails (the cap's OOM killer, say) does
// not stop the others; the run ends with a summary of every
// implementation's blocks (printRunSummary) and the children's errors.
func runMembound(f *benchFlags, args []string, out io.Writer) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("-membound: finding this binary: %w", err)
	}
	resPath := scaleResultsPath(f)
	var from int64 // the results file's records before this run
	if fi, err := os.Stat(resPath); err == nil {
		from = fi.Size()
	}
	rest := withoutFlags(args, "membound", "membound-cmd", "impl")
	var errs []error
	for _, name := range f.impls {
		cmd := exec.Command(f.memboundCmd, append([]string{f.membound, self, "-impl", name}, rest...)...)
		cmd.Stdout, cmd.Stderr = out, os.Stderr
		fmt.Fprintf(out, "\n== %s: %s\n", name, strings.Join(cmd.Args, " "))
		if err := cmd.Run(); err != nil {
			err = fmt.Errorf("-membound: %s: %w", name, err)
			fmt.Fprintf(out, "%v; going on with the others\n", err)
			errs = append(errs, err)
		}
	}
	if err := printRunSummary(out, resPath, from); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// withoutFlags returns args without the flags named (as -name value,
// -name=value, or with two dashes).
func withoutFlags(args []string, names ...string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := strings.TrimLeft(args[i], "-")
		drop, joined := false, strings.Contains(a, "=")
		for _, n := range names {
			if a == n || strings.HasPrefix(a, n+"=") {
				drop = true
			}
		}
		switch {
		case !drop || !strings.HasPrefix(args[i], "-"):
			out = append(out, args[i])
		case !joined:
			i++ // skip the value
		}
	}
	return out
}
