package runtime

// Tracepoints: a program per matching tracepoint, attached through tracefs.

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/gotrace/gotrace/codegen"
)

// attachTracepoint attaches the program of a tracepoint attachment.
func attachTracepoint(a *codegen.Attachment, prog *ebpf.Program) (link.Link, error) {
	tp := a.Tracepoint
	l, err := link.Tracepoint(tp.Category, tp.Name, prog, nil)
	if err != nil {
		return nil, fmt.Errorf("attach %s: %w", a.ProbeName, err)
	}
	return l, nil
}
