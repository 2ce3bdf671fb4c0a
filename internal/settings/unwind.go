package settings

import "fmt"

// StackUnwind says how ustack walks a user stack.
type StackUnwind int

const (
	// UnwindFramePointers is bpftrace's walk: the kernel's
	// bpf_get_stackid follows the saved frame pointers (rbp).
	UnwindFramePointers StackUnwind = iota
	// UnwindEhFrame walks in the BPF program with the rules of each
	// mapped file's .eh_frame, loaded into maps (docs/design.md,
	// "Unwinding without frame pointers"), for code built without frame
	// pointers. It walks every user stack, ustack(perf) too; kstack
	// stays the kernel's walk.
	UnwindEhFrame
)

// ParseStackUnwind reads a stack_unwind value: fp or eh_frame.
func ParseStackUnwind(s string) (StackUnwind, error) {
	for u, name := range stackUnwindNames {
		if s == name {
			return StackUnwind(u), nil
		}
	}
	return 0, fmt.Errorf("invalid stack_unwind value %q: valid values are fp and eh_frame", s)
}

var stackUnwindNames = [...]string{UnwindFramePointers: "fp", UnwindEhFrame: "eh_frame"}

// String returns the name ParseStackUnwind reads.
func (u StackUnwind) String() string { return stackUnwindNames[u] }
