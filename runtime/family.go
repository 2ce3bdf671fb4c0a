package runtime

// The family of a -c command. A command such as "sudo -u bitcoin
// ./bitcoind", "runuser -u bitcoin -- ./bitcoind" or "sh -c ./prog" runs
// the traced program in a process it starts. The probes of a -c trace are
// therefore attached for every process, and their programs count only the
// hits of the command's family, which the kernel keeps (codegen/family.go):
// the command's PID goes in before it leaves its gate, and a child of a
// member is a member from its fork, so nothing it runs is missed. This
// file reads what the family's programs need and fills the family's map;
// follow.go watches which member maps which probe's file.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/runtime/plan"
	"github.com/gotrace/gotrace/runtime/tracefs"
)

// familyRecords reads where this kernel's sched_process_fork and
// sched_process_exit records hold the fields the family programs read.
func familyRecords() (*codegen.FamilyRecords, error) {
	dir, err := tracefs.Find(os.Geteuid() == 0)
	if err != nil {
		return nil, fmt.Errorf("keep the -c command's processes: %w", err)
	}
	offset := func(event, field string) (int, error) {
		f, err := tracefs.ReadFormat(dir, tracefs.Event{Category: "sched", Name: event})
		if err != nil {
			return 0, fmt.Errorf("keep the -c command's processes: %w", err)
		}
		for _, fl := range f.Fields {
			if fl.Name == field {
				return fl.Offset, nil
			}
		}
		return -1, nil
	}
	rec := &codegen.FamilyRecords{}
	if rec.ChildPID, err = offset("sched_process_fork", "child_pid"); err != nil {
		return nil, err
	}
	if rec.ChildPID < 0 {
		return nil, errors.New("keep the -c command's processes: sched_process_fork's record has no child_pid")
	}
	if rec.GroupDead, err = offset("sched_process_exit", "group_dead"); err != nil {
		return nil, err
	}
	return rec, nil
}

// familyInput returns in with the reader of the kernel's records the
// plan chooses a -c command's family filter by.
func familyInput(in plan.Input) plan.Input {
	in.FamilyRecords = familyRecords
	return in
}

// withFamily returns in with the family filter the run's plan chose, for
// planning the libraries a -c command loads later (Loaded).
func (t *tracer) withFamily(in plan.Input) plan.Input {
	in.Codegen.Family = t.familyRecs
	return in
}

// keepFamily puts the -c command's PID in the family map, before the
// command leaves its gate; the programs that keep its descendants there
// are gotrace's own sites of the plan (plan.Plan.Own), attached after. In
// a PID namespace of gotrace's own, the PID gotrace knows is not the
// kernel's: the family's exec program (codegen.FamilySpec.Seed) puts the
// command in when it leaves its gate.
func (t *tracer) keepFamily() error {
	fam := t.spec.Family
	if fam == nil {
		return nil
	}
	if fam.Seed != "" {
		t.verbosef("usdt and uprobe probes: attached for every process, counting the hits of the -c command's family (process %d of gotrace's PID namespace, added by the kernel's PID when it runs, and those it starts)", t.child.PID)
		return nil
	}
	bitmap := make([]byte, codegen.FamilyBitmapBytes)
	setFamilyBit(bitmap, t.child.PID)
	if err := t.coll.Maps[fam.Map].Put(uint32(0), bitmap); err != nil {
		return fmt.Errorf("add the -c command to its family: %w", err)
	}
	t.verbosef("usdt and uprobe probes: attached for every process, counting the hits of the -c command's family (process %d and those it starts)", t.child.PID)
	return nil
}

// setFamilyBit sets pid's bit in a family bitmap (codegen.FamilyBitmapBytes).
func setFamilyBit(bitmap []byte, pid int) {
	word := binary.NativeEndian.Uint32(bitmap[pid/32*4:])
	binary.NativeEndian.PutUint32(bitmap[pid/32*4:], word|1<<(pid%32))
}

// familyHit reports whether a probe's program let a hit of the family
// through.
func (t *tracer) familyHit() bool {
	fam := t.spec.Family
	if fam == nil {
		return false
	}
	var hit uint64
	return t.coll.Maps[fam.Stats].Lookup(uint32(0), &hit) == nil && hit != 0
}
