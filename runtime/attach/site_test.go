package attach

import (
	"fmt"
	"testing"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/runtime/plan"
)

// TestGroupSites checks the order sites are attached in: the sites not in
// a file one by one in the plan's order, then the locations of each
// attachment and file together, the last probe's first.
func TestGroupSites(t *testing.T) {
	profile := &codegen.Attachment{Kind: lang.ProbeProfile, Probe: "profile:hz:99"}
	tp := &codegen.Attachment{Kind: lang.ProbeTracepoint, Probe: "tracepoint:sched:sched_switch"}
	first := &codegen.Attachment{Kind: lang.ProbeUSDT, Probe: "usdt:a"}
	second := &codegen.Attachment{Kind: lang.ProbeUprobe, Probe: "uprobe:b"}
	sites := []plan.Site{
		{Attachment: first, Path: "/x"},
		{Attachment: profile},
		{Attachment: first, Path: "/x"},
		{Attachment: second, Path: "/x"},
		{Attachment: first, Path: "/y"},
		{Attachment: tp},
	}
	checkGroups(t, sites,
		"profile:hz:99  x1",
		"tracepoint:sched:sched_switch  x1",
		"usdt:a /y x1",
		"uprobe:b /x x1",
		"usdt:a /x x2",
	)
}

// TestGroupSitesOwn checks that gotrace's own sites are attached one by
// one in the plan's order, a uprobe of its own too: it is not one of the
// script's locations, grouped by file and attached last probe first.
func TestGroupSitesOwn(t *testing.T) {
	var sites []plan.Site
	for _, s := range []struct {
		kind       lang.ProbeKind
		probe, own string
	}{
		{lang.ProbeUSDT, "usdt:a", ""},
		{lang.ProbeTracepoint, "tracepoint:sched:sched_process_fork", "keep"},
		{lang.ProbeTracepoint, "tracepoint:sched:sched_process_exit", "keep"},
		{lang.ProbeUprobe, "uprobe:/ld.so:_dl_debug_state", "watch"},
	} {
		sites = append(sites, plan.Site{Attachment: &codegen.Attachment{Kind: s.kind, Probe: s.probe}, Path: "/x", Own: s.own})
	}
	checkGroups(t, sites,
		"tracepoint:sched:sched_process_fork /x x1",
		"tracepoint:sched:sched_process_exit /x x1",
		"uprobe:/ld.so:_dl_debug_state /x x1",
		"usdt:a /x x1",
	)
}

// checkGroups checks the groups GroupSites makes of sites, in order:
// each named by its first site's probe and path, and how many sites.
func checkGroups(t *testing.T, sites []plan.Site, want ...string) {
	t.Helper()
	var got []string
	for _, g := range GroupSites(sites) {
		got = append(got, fmt.Sprintf("%s %s x%d", g.Sites[0].Attachment.Probe, g.Sites[0].Path, len(g.Sites)))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("GroupSites = %q, want %q", got, want)
	}
}
