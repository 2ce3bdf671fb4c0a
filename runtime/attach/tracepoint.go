package attach

// Tracepoints: a program per matching tracepoint, attached through tracefs.

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/gotrace/gotrace/runtime/plan"
)

// Tracepoint attaches prog at the tracepoint of site s.
func Tracepoint(s plan.Site, prog *ebpf.Program) ([]link.Link, error) {
	a := s.Attachment
	tp := a.Tracepoint
	l, err := link.Tracepoint(tp.Category, tp.Name, prog, nil)
	if err != nil {
		return nil, fmt.Errorf("attach %s: %w", a.ProbeName, err)
	}
	return []link.Link{l}, nil
}
