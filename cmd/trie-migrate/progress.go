package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/hexstate/hexstate/migrate"
)

// progress shows a migration's progress the way a person expects: on a
// terminal one line redrawn in place a few times a second, otherwise (a log
// file, a pipe) one line every few seconds.
type progress struct {
	out   io.Writer
	tty   bool
	every time.Duration
	last  time.Time
	drawn bool // a line is drawn in place and not ended
}

func newProgress(f *os.File) *progress {
	p := &progress{out: f, every: 5 * time.Second}
	if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		p.tty, p.every = true, 250*time.Millisecond
	}
	return p
}

// show draws p, at most once per interval unless the phase is done.
func (p *progress) show(m migrate.Progress) {
	if time.Since(p.last) < p.every && m.Fraction < 1 {
		return
	}
	p.last = time.Now()
	secs := m.Elapsed.Seconds()
	rate := 0.0
	if secs > 0 {
		rate = float64(m.Records) / secs
	}
	eta := "?"
	if m.Fraction > 0 && m.Fraction < 1 {
		eta = (time.Duration(secs/m.Fraction*float64(time.Second)) - m.Elapsed).Round(time.Second).String()
	} else if m.Fraction >= 1 {
		eta = "0s"
	}
	line := fmt.Sprintf("%-6s %5.1f%%  %d vertices  %.0f vertices/s  %.0f MiB written  %v elapsed  ETA %s",
		m.Phase, 100*m.Fraction, m.Records, rate, float64(m.Bytes)/(1<<20), m.Elapsed.Round(time.Second), eta)
	if p.tty {
		fmt.Fprintf(p.out, "\r\033[K%s", line)
		p.drawn = true
		return
	}
	fmt.Fprintln(p.out, line)
}

// end ends a line drawn in place, so that what follows starts on its own.
func (p *progress) end() {
	if p.drawn {
		fmt.Fprintln(p.out)
		p.drawn = false
	}
}
