package plan

import (
	"strings"
	"testing"

	"github.com/gotrace/gotrace/lang/attachpoint"

	"github.com/gotrace/gotrace/lang"
)

// A uprobe on an IFUNC (libc's strlen) is refused with why, rather than
// "not found" and a hint at another name: its symbol is the resolver.
func TestSymbolNotFoundIFunc(t *testing.T) {
	const libc = "/lib/x86_64-linux-gnu/libc.so.6"
	for _, tc := range []struct {
		fn, msg string
	}{
		{"strlen", "function strlen in " + libc + " is an IFUNC: its symbol is the resolver the dynamic loader calls once to choose an implementation"},
		{"no_such_function", "function no_such_function not found in " + libc},
	} {
		ap := &lang.AttachPoint{Point: attachpoint.Point{Kind: lang.ProbeUprobe, Target: libc, Func: tc.fn}, Function: attachpoint.ParseFunc(tc.fn)}
		p := &lang.Program{Probes: []*lang.Probe{{Attach: []*lang.AttachPoint{ap}, Body: &lang.Block{}}}}
		h := hostOf(t, p, Input{})
		// The policy reads what the host pass read, not the file.
		facts := h.targets[libc]
		facts.file = nil
		h.targets[libc] = facts
		e := symbolNotFound(ap, h)
		if e.Msg != tc.msg {
			t.Errorf("%s: message %q, want %q", tc.fn, e.Msg, tc.msg)
		}
		if tc.fn == "strlen" && !strings.Contains(e.Hint, "loader") && !strings.Contains(e.Hint, "__strlen_") {
			t.Errorf("%s: hint %q says nothing of the implementations", tc.fn, e.Hint)
		}
	}
}
