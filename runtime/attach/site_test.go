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
	var got []string
	for _, g := range GroupSites(sites) {
		got = append(got, fmt.Sprintf("%s %s x%d", g.Sites[0].Attachment.Probe, g.Sites[0].Path, len(g.Sites)))
	}
	want := []string{
		"profile:hz:99  x1",
		"tracepoint:sched:sched_switch  x1",
		"usdt:a /y x1",
		"uprobe:b /x x1",
		"usdt:a /x x2",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("GroupSites = %q, want %q", got, want)
	}
}
