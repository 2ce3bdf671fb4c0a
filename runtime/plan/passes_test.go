package plan

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/lang"
)

// TestPasses checks how the sites of a plan are split into the passes of
// a run: what gotrace runs itself, the groups attached before BEGIN (the
// sites not in a file one by one in the plan's order, then the locations
// of each attachment and file together, the last probe's first),
// gotrace's own sites one by one, and the kernel's probes after BEGIN.
func TestPasses(t *testing.T) {
	att := func(kind lang.ProbeKind, probe string) *codegen.Attachment {
		return &codegen.Attachment{Kind: kind, Probe: probe}
	}
	begin := att(lang.ProbeBegin, "BEGIN")
	profile := att(lang.ProbeProfile, "profile:hz:99")
	tp := att(lang.ProbeTracepoint, "tracepoint:sched:sched_switch")
	first := att(lang.ProbeUSDT, "usdt:a")
	second := att(lang.ProbeUprobe, "uprobe:b")
	site := func(a *codegen.Attachment, path string) Site {
		return Site{Attachment: a, Path: path, When: whenOf(a.Kind)}
	}
	own := func(kind lang.ProbeKind, probe, path string) Site {
		s := Site{Attachment: att(kind, probe), Path: path, Own: "keep"}
		s.When = whenOfSite(s)
		return s
	}
	sites := []Site{
		site(first, "/x"),
		site(begin, ""),
		site(profile, ""),
		site(first, "/x"),
		site(tp, ""),
		site(second, "/x"),
		site(first, "/y"),
	}
	ownSites := []Site{
		own(lang.ProbeTracepoint, "tracepoint:sched:sched_process_fork", ""),
		own(lang.ProbeUprobe, "uprobe:/ld.so:_dl_debug_state", "/ld.so"),
		own(lang.ProbeTracepoint, "tracepoint:sched:sched_process_exit", ""),
	}
	ps := passesOf(sites, ownSites)
	if len(ps.Run) != 1 || ps.Run[0].Attachment != begin {
		t.Errorf("Run = %v, want BEGIN alone", ps.Run)
	}
	checkGroups(t, "Before", ps.Before,
		"profile:hz:99  x1",
		"usdt:a /y x1",
		"uprobe:b /x x1",
		"usdt:a /x x2",
	)
	checkGroups(t, "Own", ps.Own,
		"tracepoint:sched:sched_process_fork  x1",
		"uprobe:/ld.so:_dl_debug_state /ld.so x1",
		"tracepoint:sched:sched_process_exit  x1",
	)
	checkGroups(t, "After", ps.After, "tracepoint:sched:sched_switch  x1")
	if got, want := UserFiles(ps.Before), []string{"/y", "/x"}; !slices.Equal(got, want) {
		t.Errorf("UserFiles(Before) = %q, want %q", got, want)
	}
	if got := UserFiles(ps.Own); got != nil {
		t.Errorf("UserFiles(Own) = %q, want none: gotrace's own uprobe is no probe's file", got)
	}
}

// checkGroups checks the groups of one pass, in order: each named by its
// first site's probe and path, and how many sites.
func checkGroups(t *testing.T, pass string, groups []Group, want ...string) {
	t.Helper()
	var got []string
	for _, g := range groups {
		got = append(got, fmt.Sprintf("%s %s x%d", g.First().Attachment.Probe, g.First().Path, len(g.Sites)))
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s = %q, want %q", pass, got, want)
	}
}
