package main

import (
	"syscall"
	"time"

	"github.com/hexstate/hexstate/migrate"
)

// cpuTime is the CPU time (user and system, every thread) this process has
// used so far, or 0 where the system does not say.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// copyCPU measures the CPU time of a migration's copy: from its creation to
// the first report of the verification phase. On a shared machine it varies
// less with the load than the copy's wall-clock time.
type copyCPU struct {
	start, used time.Duration
	done        bool
}

func newCopyCPU() *copyCPU { return &copyCPU{start: cpuTime()} }

// wrap returns show, noting the CPU time when the verification starts.
func (c *copyCPU) wrap(show func(migrate.Progress)) func(migrate.Progress) {
	return func(p migrate.Progress) {
		if p.Phase == "verify" && !c.done {
			c.used, c.done = cpuTime()-c.start, true
		}
		show(p)
	}
}
