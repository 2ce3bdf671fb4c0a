package main

import (
	"time"

	"github.com/cilium/ebpf"
)

// progWatch samples the kernel's run-time statistics of the eBPF programs
// a tool loads (kernel.bpf_stats_enabled, switched on with
// ebpf.EnableStats) while the tool runs, and keeps those of the program
// that ran most: for a hit case, the probe's program. Its average run
// time is the cost of the program body itself, without the uprobe trap
// that dominates (and blurs) the loop's time per iteration.
type progWatch struct {
	before map[ebpf.ProgramID]bool
	stop   chan struct{}
	done   chan struct{}
	best   ebpf.ProgramStats
}

// watchPrograms starts sampling every interval; programs loaded before
// the call are ignored.
func watchPrograms(interval time.Duration) *progWatch {
	w := &progWatch{before: map[ebpf.ProgramID]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	for _, id := range programIDs() {
		w.before[id] = true
	}
	go func() {
		defer close(w.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			w.sample()
			select {
			case <-w.stop:
				return
			case <-t.C:
			}
		}
	}()
	return w
}

// sample reads the statistics of every new program.
func (w *progWatch) sample() {
	for _, id := range programIDs() {
		if w.before[id] {
			continue
		}
		p, err := ebpf.NewProgramFromID(id)
		if err != nil {
			continue // gone since it was listed
		}
		st, err := p.Stats()
		p.Close()
		if err == nil && st.RunCount >= w.best.RunCount {
			w.best = *st
		}
	}
}

// Stop ends the sampling and returns the mean run time in ns of the
// program that ran most, and how often it ran.
func (w *progWatch) Stop() (ns float64, runs uint64) {
	close(w.stop)
	<-w.done
	if w.best.RunCount == 0 {
		return 0, 0
	}
	return float64(w.best.Runtime.Nanoseconds()) / float64(w.best.RunCount), w.best.RunCount
}

// programIDs lists the IDs of the programs loaded now.
func programIDs() []ebpf.ProgramID {
	var ids []ebpf.ProgramID
	id := ebpf.ProgramID(0)
	for {
		next, err := ebpf.ProgramGetNextID(id)
		if err != nil { // ErrNotExist after the last one
			return ids
		}
		ids = append(ids, next)
		id = next
	}
}
