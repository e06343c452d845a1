package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"text/tabwriter"
	"time"
)

// A -membound run's children each print their own report; printRunSummary reads
// back the block records they appended to the results file and reports each
// implementation over all its parts (an -impl list may name one twice, so
// that its blocks fall early and late in the run), and each hexstate
// layout's block mean against each go-ethereum mode's over the blocks both
// ran (a child killed part-way ran fewer).

// implBlocks is one implementation's block records of a run, in run order,
// and how many stretches of the run they fall in (parts: another
// implementation's blocks came between).
type implBlocks struct {
	name   string
	blocks []blockRecord
	parts  int
}

// readRunBlocks returns the block records in the results file at path from
// byte offset from on, by implementation in the order they first appear.
func readRunBlocks(path string, from int64) ([]*implBlocks, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	var out []*implBlocks
	last := "" // the implementation of the block record before
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var b blockRecord
		if err := json.Unmarshal(sc.Bytes(), &b); err != nil {
			return nil, fmt.Errorf("results %s: %w", path, err)
		}
		if b.Kind != "block" {
			continue
		}
		i := slices.IndexFunc(out, func(x *implBlocks) bool { return x.name == b.Impl })
		if i < 0 {
			out = append(out, &implBlocks{name: b.Impl})
			i = len(out) - 1
		}
		out[i].blocks = append(out[i].blocks, b)
		if b.Impl != last {
			out[i].parts++
			last = b.Impl
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("results %s: %w", path, err)
	}
	return out, nil
}

// totals returns the total times of the blocks of bs that keep says to.
func totals(bs []blockRecord, keep func(uint64) bool) phaseTimes {
	var p phaseTimes
	for _, b := range bs {
		if keep(b.Block) {
			p = append(p, time.Duration(b.TotalMs*float64(time.Millisecond)))
		}
	}
	return p
}

// printRunSummary prints the run's per-implementation table and ratios from
// the block records of the results file at path after offset from.
func printRunSummary(out io.Writer, path string, from int64) error {
	impls, err := readRunBlocks(path, from)
	if err != nil || len(impls) == 0 {
		return err
	}
	all := func(uint64) bool { return true }
	fmt.Fprintf(out, "\nthe run, each implementation over all its parts (ms per block, from %s)\n", path)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "impl\tblocks\tparts\tfirst\tlast\ttotal mean\tp50\tp99\t")
	for _, im := range impls {
		t := totals(im.blocks, all)
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t\n", im.name, len(im.blocks), im.parts,
			im.blocks[0].Block, im.blocks[len(im.blocks)-1].Block, ms(t.mean()), ms(t.pct(0.5)), ms(t.pct(0.99)))
	}
	tw.Flush()
	for _, h := range impls {
		if h.name != "hexstate-v2" && h.name != "hexstate-v1" {
			continue
		}
		for _, g := range impls {
			if g.name != "geth" && g.name != "geth-state" {
				continue
			}
			inBoth := blocksOf(h.blocks, blocksOf(g.blocks, nil))
			both := func(n uint64) bool { return inBoth[n] }
			ht, gt := totals(h.blocks, both), totals(g.blocks, both)
			if len(ht) == 0 {
				continue
			}
			fmt.Fprintf(out, "%s / %s: %s (block means over the %d blocks both ran: %s against %s ms)\n",
				h.name, g.name, ratio(ht.mean(), gt.mean()), len(ht), ms(ht.mean()), ms(gt.mean()))
		}
	}
	return nil
}

// blocksOf returns the block numbers of bs, those in within only unless
// within is nil.
func blocksOf(bs []blockRecord, within map[uint64]bool) map[uint64]bool {
	out := make(map[uint64]bool, len(bs))
	for _, b := range bs {
		if within == nil || within[b.Block] {
			out[b.Block] = true
		}
	}
	return out
}
