package plan

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/internal/fixture"
	"github.com/gotrace/gotrace/internal/settings"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/usdt"
)

// TestOwnSites plans a -c trace with a family filter and a usdt probe
// without a path: besides the script's sites, the plan has gotrace's
// own, the family's two tracepoints and the loader's uprobe on the
// command's interpreter for the command's process alone, all attached
// before BEGIN and each saying why; they are kept apart from the
// script's sites, which alone count as its probes.
func TestOwnSites(t *testing.T) {
	bin := fixture.Build(t, "bitcoind")
	p, info := analyzed(t, `usdt::net:inbound_message { } BEGIN { }`)
	files := &usdt.Files{}
	defer files.Close()
	objs, err := CommandObjects(bin, files)
	if err != nil {
		t.Fatal(err)
	}
	f, err := files.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	interp, err := f.Interpreter()
	if err != nil || interp == "" {
		t.Fatalf("the fixture's interpreter: %q, %v", interp, err)
	}
	const child = 4242
	records := func() (*codegen.FamilyRecords, error) { return &codegen.FamilyRecords{ChildPID: 8, GroupDead: 12}, nil }
	pl, err := Make(p, info, Input{Files: files, Objects: objs, Command: bin, ChildPID: child, FamilyRecords: records})
	if err != nil {
		t.Fatal(err)
	}
	if errors.Is(pl.NoFamily, errPIDNamespace) {
		t.Skip(pl.NoFamily)
	}
	if pl.Family == nil || pl.Spec.Family == nil || pl.Spec.LoaderProgram == "" {
		t.Fatalf("no family filter (%v) or no loader program %q", pl.NoFamily, pl.Spec.LoaderProgram)
	}

	// The script's sites: the usdt probe's locations and BEGIN, each an
	// attachment of the Spec.
	var kinds []lang.ProbeKind
	for _, s := range pl.Sites {
		if s.Own != "" {
			t.Errorf("the script's site %s is gotrace's own: %q", s.Attachment.Probe, s.Own)
		}
		if !slices.ContainsFunc(pl.Spec.Attachments, func(a codegen.Attachment) bool { return a.Program == s.Attachment.Program }) {
			t.Errorf("the script's site %s has no attachment in the Spec", s.Attachment.Probe)
		}
		kinds = append(kinds, s.Attachment.Kind)
	}
	if !slices.Contains(kinds, lang.ProbeUSDT) || !slices.Contains(kinds, lang.ProbeBegin) {
		t.Errorf("the script's sites are of kinds %v, want usdt and BEGIN", kinds)
	}

	fam := pl.Spec.Family
	type own struct {
		program, probe, path, symbol string
		pid                          int
		when                         When
		own, why                     string
	}
	want := []own{
		{fam.Fork, "tracepoint:sched:sched_process_fork", "", "", 0, BeforeBegin,
			"keep the -c command's processes", "gotrace's own: keeps the -c command's family"},
		{fam.Exit, "tracepoint:sched:sched_process_exit", "", "", 0, BeforeBegin,
			"keep the -c command's processes", "gotrace's own: keeps the -c command's family"},
		{pl.Spec.LoaderProgram, "uprobe:" + interp + ":_dl_debug_state", interp, "_dl_debug_state", child, BeforeBegin,
			"watch the loads of " + bin, "gotrace's own: libraries the command loads later"},
	}
	var got []own
	for _, s := range pl.Own {
		got = append(got, own{s.Attachment.Program, s.Attachment.Probe, s.Path, s.Symbol, s.PID, s.When, s.Own, s.Why})
		if slices.ContainsFunc(pl.Spec.Attachments, func(a codegen.Attachment) bool { return a.Program == s.Attachment.Program }) {
			t.Errorf("gotrace's own site %s is an attachment of the script's", s.Attachment.Probe)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("gotrace's own sites:\n%+v\nwant\n%+v", got, want)
	}
	if tp := pl.Own[0].Attachment.Tracepoint; tp == nil || tp.Category != "sched" || tp.Name != "sched_process_fork" {
		t.Errorf("the fork site's tracepoint is %+v", tp)
	}

	// --dry-run -v counts the script's sites and lists gotrace's own
	// after them.
	var out strings.Builder
	pl.Write(&out)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	head := fmt.Sprintf("plan: %d sites, 3 of gotrace's own, and the -c command's library loads watched for usdt probes without a path", len(pl.Sites))
	tail := []string{
		fmt.Sprintf("%s tracepoint:sched:sched_process_fork: gotrace's own: keeps the -c command's family", fam.Fork),
		fmt.Sprintf("%s tracepoint:sched:sched_process_exit: gotrace's own: keeps the -c command's family", fam.Exit),
		fmt.Sprintf("%s uprobe:%s:_dl_debug_state: gotrace's own: libraries the command loads later (process %d)", pl.Spec.LoaderProgram, interp, child),
	}
	if len(lines) != 1+len(pl.Sites)+len(tail) || lines[0] != head {
		t.Fatalf("plan:\n%s\nwant %q first and %d lines", out.String(), head, 1+len(pl.Sites)+len(tail))
	}
	for i, w := range tail {
		if got := strings.TrimSpace(lines[1+len(pl.Sites)+i]); got != w {
			t.Errorf("own site %d: %q, want %q", i, got, w)
		}
	}
}

// TestOwnSitesStatic plans no loader site for a -c command without an
// interpreter (a static executable loads nothing later), and refuses a
// command whose interpreter could not be read.
func TestOwnSitesStatic(t *testing.T) {
	spec := &codegen.Spec{LoaderProgram: "loader"}
	own, err := ownSites(spec, &hostFacts{loader: loaderFact{command: "/bin/static"}}, Input{ChildPID: 1})
	if err != nil || len(own) != 0 {
		t.Errorf("static command: sites %+v, error %v; want none", own, err)
	}
	broken := errors.New("read the interpreter of /bin/x: broken")
	if _, err := ownSites(spec, &hostFacts{loader: loaderFact{command: "/bin/x", err: broken}}, Input{ChildPID: 1}); !errors.Is(err, broken) {
		t.Errorf("unreadable command: error %v, want %v", err, broken)
	}
}

// TestPlanWaiting makes the plan of a -c trace whose usdt attach points
// without a path match at start or not: those that match nothing in the
// command's objects wait for a library it loads later (Plan.Waiting),
// each counted as a probe; a trace without -c watches no loads and has
// none waiting.
func TestPlanWaiting(t *testing.T) {
	bin := fixture.Build(t, "bitcoind")
	files := &usdt.Files{}
	defer files.Close()
	objs, err := CommandObjects(bin, files)
	if err != nil {
		t.Fatal(err)
	}
	p, info := analyzed(t, `usdt::net:inbound_message { } usdt::lib:hit { } usdt::lib:gone, usdt::net:outbound_message { }`)
	pl, err := Make(p, info, Input{Files: files, Objects: objs, Command: bin, ChildPID: 4242, MissingProbes: settings.MissingIgnore,
		FamilyRecords: func() (*codegen.FamilyRecords, error) { return &codegen.FamilyRecords{ChildPID: 8, GroupDead: 12}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ap := range pl.Waiting {
		got = append(got, ap.Raw)
	}
	if want := []string{"usdt::lib:hit", "usdt::lib:gone"}; !slices.Equal(got, want) {
		t.Errorf("waiting %q, want %q", got, want)
	}
	pl, err = Make(p, info, Input{Files: files, Objects: objs, MissingProbes: settings.MissingIgnore})
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Waiting) != 0 {
		t.Errorf("without -c, %d attach points wait", len(pl.Waiting))
	}
}
