package main

import (
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
// implementations do.
func runMembound(f *benchFlags, args []string, out io.Writer) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("-membound: finding this binary: %w", err)
	}
	rest := withoutFlags(args, "membound", "membound-cmd", "impl")
	for _, name := range f.impls {
		cmd := exec.Command(f.memboundCmd, append([]string{f.membound, self, "-impl", name}, rest...)...)
		cmd.Stdout, cmd.Stderr = out, os.Stderr
		fmt.Fprintf(out, "\n== %s: %s\n", name, strings.Join(cmd.Args, " "))
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("-membound: %s: %w", name, err)
		}
	}
	return nil
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
