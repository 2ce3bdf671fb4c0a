package runtime

// The processes a run traces: the -c command, started held at its gate
// before the plan (its PID filters the probes and is cpid) and released
// once every probe is attached, or the -p process. What the command's
// family does after is family.go's (the programs' filter) and
// follow.go's (which member maps which file).

import (
	"github.com/gotrace/gotrace/runtime/plan"
	"github.com/gotrace/gotrace/runtime/proc"
)

// startProcesses starts the -c command, held at its gate, or opens the
// -p process. It returns the objects the command maps at start (the
// executable and the libraries it needs), which the plan searches for
// the probes of attach points without a path.
func (t *tracer) startProcesses() ([]string, error) {
	switch {
	case t.opts.Command != "":
		objs, err := plan.CommandObjects(t.opts.Command, t.files)
		if err != nil {
			return nil, err
		}
		if t.child, err = proc.StartChild(t.opts.Command, proc.RunAs{User: t.opts.User, Root: t.opts.AsRoot}); err != nil {
			return nil, err
		}
		t.pid = t.child.PID
		return objs, nil
	case t.opts.PID != 0:
		var err error
		t.process, err = proc.OpenProcess(t.opts.PID)
		return nil, err
	}
	return nil, nil
}

// childPID is the -c command's PID, 0 without one.
func (t *tracer) childPID() int {
	if t.child == nil {
		return 0
	}
	return t.child.PID
}

// releaseChild lets the -c command leave its gate, and makes the follower
// of the processes it starts for files, the probes' files (t.follow, nil
// without). It is not called once exit() has run: the command never runs
// any of its code then, as in bpftrace, and close kills it at its gate.
func (t *tracer) releaseChild(files []string) {
	if t.child == nil {
		return
	}
	if err := t.child.Release(); err != nil {
		// The command could not be executed: its child exits, which
		// ends the trace as the command's exit would (BEGIN's output
		// and the maps are printed), and the error is the run's.
		t.keepRunErr(err)
	} else {
		t.follow = newFollower(t, t.child.PID, files)
	}
}
