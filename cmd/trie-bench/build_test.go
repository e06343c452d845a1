package main

import (
	"io"
	"testing"
)

// TestRunBuilds runs the state workload end to end on a small state with both
// of hexstate's builds (BulkLoadAccounts and the streaming StateLoader), in both
// layouts beside go-ethereum: run fails on any state root that differs from
// geth's, at the build or after any block.
func TestRunBuilds(t *testing.T) {
	for _, build := range []string{"bulk", "stream"} {
		t.Run(build, func(t *testing.T) {
			args := []string{"-accounts", "20000", "-blocks", "5", "-block-accounts", "300", "-block-slots", "600",
				"-cache-mb", "16", "-build", build, "-dir", t.TempDir()}
			if err := run(args, io.Discard); err != nil {
				t.Fatal(err)
			}
		})
	}
}
