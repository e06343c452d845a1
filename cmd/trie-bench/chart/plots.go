package main

import (
	"fmt"
	"image/color"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

func implColor(i int) color.Color { return plotutil.Color(i) }

// blockChart draws per-block total time by block number for one label.
func blockChart(recs []record, label, path string) error {
	p := plot.New()
	cad, top := 0, 0.0
	for i, impl := range implOrder {
		var pts plotter.XYs
		for _, r := range recs {
			if r.Kind == "block" && r.Label == label && r.Impl == impl {
				pts = append(pts, plotter.XY{X: float64(r.Block), Y: r.TotalMs})
				cad, top = r.Cadence, max(top, r.TotalMs)
			}
		}
		if len(pts) == 0 {
			continue
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Color, l.Width = implColor(i), vg.Points(1.2)
		p.Add(l)
		p.Legend.Add(implLegend[impl], l)
	}
	accounts := 0
	for _, r := range recs {
		if r.Label == label {
			accounts = r.Accounts
		}
	}
	p.Title.Text = fmt.Sprintf("per-block time, %s accounts, persist every %d (%s)", millions(accounts), cad, label)
	p.X.Label.Text = "block"
	p.Y.Label.Text = "ms per block (apply + root + persist)"
	p.Y.Min, p.Y.Max = 0, 1.35*top // room for the legend
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	return p.Save(9*vg.Inch, 5*vg.Inch, path)
}

// sizeChart draws each implementation's mean per-block time against the
// state's accounts, over the block records of runs persisting every block (so
// a run cut short still counts its blocks).
func sizeChart(recs []record, path string) error {
	p := plot.New()
	top := 0.0
	for i, impl := range implOrder {
		sum, n := map[int]float64{}, map[int]int{}
		for _, r := range recs {
			if r.Kind == "block" && r.Impl == impl && r.Cadence == 1 {
				sum[r.Accounts] += r.TotalMs
				n[r.Accounts]++
			}
		}
		if len(n) == 0 {
			continue
		}
		var sizes []int
		for a := range n {
			sizes = append(sizes, a)
		}
		sort.Ints(sizes)
		var pts plotter.XYs
		for _, a := range sizes {
			m := sum[a] / float64(n[a])
			pts = append(pts, plotter.XY{X: float64(a) / 1e6, Y: m})
			top = max(top, m)
		}
		l, s, err := plotter.NewLinePoints(pts)
		if err != nil {
			return err
		}
		l.Color, s.Color, l.Width = implColor(i), implColor(i), vg.Points(1.5)
		s.Shape = plotutil.Shape(i)
		p.Add(l, s)
		p.Legend.Add(implLegend[impl], l, s)
	}
	p.Title.Text = "mean per-block time against state size (persist every block)"
	p.X.Label.Text = "accounts (millions; about 3 storage slots per account)"
	p.Y.Label.Text = "mean ms per block"
	p.X.Min, p.Y.Min, p.Y.Max = 0, 0, 1.35*top
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	return p.Save(8*vg.Inch, 5*vg.Inch, path)
}

func millions(n int) string {
	if n >= 1_000_000 {
		return fmt.Sprintf("%gM", float64(n)/1e6)
	}
	return fmt.Sprintf("%gk", float64(n)/1e3)
}
