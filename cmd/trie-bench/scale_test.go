package main

import (
	"io"
	"testing"
)

// TestScaleRun builds a small scale state on all four implementations, runs
// blocks persisting every block, then continues on the kept stores (-reuse)
// persisting every second block: run fails on any state root or read digest
// that differs between implementations.
func TestScaleRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a contract of 100k+ slots four times")
	}
	dir := t.TempDir()
	args := []string{"-mode", "scale", "-impl", "hexstate-v2,hexstate-v1,geth,geth-state", "-accounts", "3000",
		"-block-accounts", "200", "-block-slots", "400", "-block-account-reads", "200", "-block-slot-reads", "400",
		"-cache-mb", "16", "-dir", dir}
	if err := run(append(args, "-blocks", "3"), io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := run(append(args, "-blocks", "3"), io.Discard); err == nil {
		t.Fatal("a second build on kept stores without -reuse succeeded")
	}
	if err := run(append(args, "-blocks", "4", "-persist-every", "2", "-reuse"), io.Discard); err != nil {
		t.Fatal(err)
	}
}

// TestScaleBlockDeterministic checks that a block is a function of its seed
// and number alone.
func TestScaleBlockDeterministic(t *testing.T) {
	s := scaleShape{seed: 7, accounts: 5000}
	c := scaleBlockCfg{accWrites: 50, slotWrites: 100, accReads: 50, slotReads: 100}
	a, b := genScaleBlock(s, s.hotContracts(), c, 12), genScaleBlock(s, s.hotContracts(), c, 12)
	for k := range a.slotOps {
		if a.slotOps[k] != b.slotOps[k] {
			t.Fatalf("slot op %d differs", k)
		}
	}
	for k := range a.accOps {
		if a.accOps[k] != b.accOps[k] {
			t.Fatalf("account op %d differs", k)
		}
	}
}
