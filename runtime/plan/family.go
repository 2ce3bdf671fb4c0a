package plan

// The family filter of a -c trace is a choice of what is attached: with
// it, the usdt and uprobe probes attach for every process and their
// programs count only the hits of the command's family (codegen's
// Options.Family); without it, they attach for the command's process
// alone, as with -p. gatherHost reads what decides it, chooseFamily
// decides, and the plan carries the choice to the runtime, which creates
// what it says.

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/internal/capability"
	"github.com/gotrace/gotrace/runtime/tracefs"
)

// familyFact is what the host says of a family filter: where the
// kernel's fork and exit records hold what its programs read, or why
// they cannot be read or would see other PIDs than gotrace's.
type familyFact struct {
	records *codegen.FamilyRecords
	err     error
}

// readFamily reads what decides the family filter of a run on in, for a
// -c command whose trace has probes in user files: the records' layout
// (in.FamilyRecords), and in a PID namespace of gotrace's own, whether
// programs can read ids in it (pidnsNot, readPIDNamespace's reason why
// not): the command's PID, which gotrace knows as the namespace numbers
// it, then goes into the family by the kernel's when it execs (codegen's
// FamilySpec.Seed).
func readFamily(in Input, pidnsNot string) familyFact {
	rec, err := in.FamilyRecords()
	if err == nil && pidnsNot != "" {
		err = fmt.Errorf("keep the -c command's processes: %w (%s)", errPIDNamespace, pidnsNot)
	}
	return familyFact{records: rec, err: err}
}

// chooseFamily decides whether the programs filter on the -c command's
// family, from what gatherHost read. Where the tracepoints' formats
// cannot be read (a user with CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN but
// not the right to read tracefs, which attaching a tracepoint needs
// too), or gotrace runs in a PID namespace of its own whose ids programs
// cannot read (readPIDNamespace), the probes are
// attached for the command's process alone, which in.Verbose is told,
// and the returned reason lets the end of the trace say which processes
// the command started were not traced. Any other error ends the run.
func chooseFamily(h *hostFacts, in Input) (rec *codegen.FamilyRecords, none, err error) {
	f := h.family
	switch {
	case f.records == nil && f.err == nil:
		// Not asked: no -c command, or no probe in a user file.
		return nil, nil, nil
	case f.err == nil:
		return f.records, nil, nil
	case errors.Is(f.err, fs.ErrPermission) || errors.Is(f.err, tracefs.ErrNotMounted) || errors.Is(f.err, errPIDNamespace):
		if in.Verbose != nil {
			fmt.Fprintf(in.Verbose, "usdt and uprobe probes: attached for the -c command's process alone: %v\n", f.err)
		}
		return nil, f.err, nil
	}
	return nil, nil, f.err
}

// errPIDNamespace is why a gotrace in a PID namespace of its own whose
// ids programs cannot read has no family filter.
var errPIDNamespace = errors.New("gotrace runs in a PID namespace of its own, where the command's PID is not the one the kernel's programs see")

// readPIDNamespace reads gotrace's PID namespace: nil in the initial one,
// whose ids the kernel's programs read. In one of its own, the namespace
// the programs read ids in, when the kernel can (has answers
// capability.NamespacePIDs); else nil, and why, for a warning.
func readPIDNamespace(has capabilityOf) (*codegen.PIDNamespace, string) {
	dev, ino, initial, err := capability.OwnPIDNamespace()
	switch {
	case err != nil:
		return nil, err.Error()
	case initial:
		return nil, ""
	}
	if row := has(capability.NamespacePIDs); !row.Available {
		return nil, row.Evidence
	}
	return &codegen.PIDNamespace{Dev: dev, Ino: ino}, ""
}
