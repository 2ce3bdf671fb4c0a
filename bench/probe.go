package main

import (
	"flag"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// LoopCost is what the loop's main thread says its loop cost it: its own
// CPU time per iteration (the uprobe handlers run on it), the time per
// iteration it waited for a CPU while runnable, and its involuntary
// context switches. Unlike the loop's rate, these hardly move with the
// machine's load, which on a shared 2-core VM moves the rate by 2x from
// one run to the next.
type LoopCost struct {
	CPUNS, WaitNS float64
	Switches      int64
}

// loopCost reads LoopCost from the loop's line.
var loopCost = regexp.MustCompile(`(?m)^iterations=\d+ .* cpu_ns=([0-9.]+) wait_ns=(-?[0-9.]+) nvcsw=\d+ nivcsw=(\d+)`)

// parseLoopCost reads the loop's LoopCost from its output, zero when the
// line lacks it.
func parseLoopCost(out []byte) LoopCost {
	m := loopCost.FindSubmatch(out)
	if m == nil {
		return LoopCost{}
	}
	var c LoopCost
	c.CPUNS, _ = strconv.ParseFloat(string(m[1]), 64)
	c.WaitNS, _ = strconv.ParseFloat(string(m[2]), 64)
	c.Switches, _ = strconv.ParseInt(string(m[3]), 10, 64)
	return c
}

// baseline is a second gotrace binary the probe-effect cases also run
// (-o and -w), interleaved with the others: a build from before a change,
// to say what the change bought under the same load.
var baseline = flag.String("baseline", "", "also run the gotrace at `FILE` in the probe cases")

// tools are the built programs and the work directory a run needs.
type tools struct {
	gotrace, bpftrace, loop, dir string
}

// probeVariant is one way the probe-effect case runs the loop.
type probeVariant struct {
	name string
	// tool is "" for the loop on its own.
	tool string
	// args replace c.Args's leading output flags: "-o OUT" or "CAPTURE".
	out string
}

// probeEffect runs case c (a KindProbe) n times in each of four ways,
// rotating which goes first so that a machine getting busier slows them
// alike: the loop untraced, under bpftrace -o FILE, under gotrace -o FILE,
// under gotrace -w FILE and under gotrace --nats. It prints, for each, the medians of the
// loop's rate, its thread's LoopCost and the lines delivered, and each
// tool's rate against bpftrace's.
func probeEffect(w io.Writer, n int, c Case, t tools) error {
	variants := []probeVariant{
		{name: "untraced"},
		{name: "bpftrace -o", tool: t.bpftrace, out: "OUT"},
		{name: "gotrace -o", tool: t.gotrace, out: "OUT"},
		{name: "gotrace -w", tool: t.gotrace, out: "CAPTURE"},
		{name: "gotrace --nats", tool: t.gotrace, out: "NATS"},
	}
	// gotrace --nats publishes to a local JetStream (bench/nats.go): the
	// loop's own CPU per event shows that the bus is on the reader's
	// side; its rate, that the reader's work competes for the cores.
	var err error
	if natsBus, err = startNATS(t.dir); err != nil {
		return err
	}
	defer func() {
		natsBus.stop()
		natsBus = nil
	}()
	if *baseline != "" {
		variants = append(variants,
			probeVariant{name: "baseline -o", tool: *baseline, out: "OUT"},
			probeVariant{name: "baseline -w", tool: *baseline, out: "CAPTURE"})
	}
	runs := make([][]Run, len(variants))
	for i := 0; i < n; i++ {
		for j := range variants {
			k := (i + j) % len(variants)
			v := variants[k]
			r, err := probeRun(v, c, t)
			if err != nil {
				return fmt.Errorf("%s, %s: %w", c.Name, v.name, err)
			}
			runs[k] = append(runs[k], r)
		}
	}
	events := loopEvents(c)
	bRate := median(field(runs[1], func(r Run) float64 { return r.Rate }))
	fmt.Fprintf(w, "done %s: the loop's rate, its thread's CPU and run-queue wait per event and involuntary switches, lines delivered of %d (median of %d, interleaved)\n", c.Name, events, n)
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "\tevents/s\tvs bpftrace\tCPU ns/event\twait ns/event\tswitches\tdelivered\tlost")
	for k, v := range variants {
		rs := runs[k]
		rate := median(field(rs, func(r Run) float64 { return r.Rate }))
		delivered := "-"
		lost := "-"
		if v.tool != "" {
			lines := field(rs, func(r Run) float64 { return r.Value })
			delivered = fmt.Sprintf("%.0f (%.0f-%.0f)", median(lines), slices.Min(lines), slices.Max(lines))
			lost = fmt.Sprintf("%.0f", median(field(rs, func(r Run) float64 { return float64(r.Lost) })))
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.2fx\t%.0f\t%.0f\t%.0f\t%s\t%s\n", v.name, rate, ratio(rate, bRate),
			median(field(rs, func(r Run) float64 { return r.Loop.CPUNS })),
			median(field(rs, func(r Run) float64 { return r.Loop.WaitNS })),
			median(field(rs, func(r Run) float64 { return float64(r.Loop.Switches) })),
			delivered, lost)
	}
	tw.Flush()
	fmt.Fprintln(w)
	return nil
}

// probeRun runs the loop once as v says.
func probeRun(v probeVariant, c Case, t tools) (Run, error) {
	if v.tool == "" {
		out, err := exec.Command(t.loop, strconv.FormatInt(loopEvents(c), 10)).Output()
		if err != nil {
			return Run{}, fmt.Errorf("run loop untraced: %w", err)
		}
		m := meanNS.FindSubmatch(out)
		if m == nil {
			return Run{}, fmt.Errorf("run loop untraced: no mean_ns in %q", out)
		}
		ns, _ := strconv.ParseFloat(string(m[1]), 64)
		return Run{Rate: 1e9 / ns, Loop: parseLoopCost(out)}, nil
	}
	vc := c
	vc.Kind = KindProbe
	if v.out == "OUT" {
		vc.Args = append([]string{"-o", "OUT"}, c.Args...)
	} else {
		vc.Args = append([]string{v.out}, c.Args...)
	}
	return measure(v.tool, t.loop, vc, t.dir, nil)
}

// loopEvents is the iterations of c's -c "LOOP N" command.
func loopEvents(c Case) int64 {
	for i, a := range c.Args {
		if a == "-c" && i+1 < len(c.Args) {
			if f := strings.Fields(c.Args[i+1]); len(f) >= 2 {
				n, _ := strconv.ParseInt(f[1], 10, 64)
				return n
			}
		}
	}
	return 0
}

// field returns f of each run.
func field(runs []Run, f func(Run) float64) []float64 {
	v := make([]float64, len(runs))
	for i, r := range runs {
		v[i] = f(r)
	}
	return v
}
