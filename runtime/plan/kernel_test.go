package plan

import (
	"slices"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/internal/capability"
	"github.com/gotrace/gotrace/internal/testenv"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/usdt"
)

// TestExpandKprobes expands a kprobe wildcard into one attach point per
// matching kernel function (of available_filter_functions, or of
// /proc/kallsyms where the kernel refuses that list, as this project's
// does), each named as written.
func TestExpandKprobes(t *testing.T) {
	testenv.RequireRoot(t)
	p, err := lang.Parse("test.bt", `kprobe:vfs_rea* { @ = count(); }`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lang.Analyze(p, lang.Config{}, nil); err != nil {
		t.Fatal(err)
	}
	res := map[*lang.AttachPoint][]*lang.AttachPoint{}
	if err := expandKprobes(p, hostOf(t, p, Input{}), res); err != nil {
		t.Fatal(err)
	}
	var raws []string
	for _, ap := range res[p.Probes[0].Attach[0]] {
		if !strings.HasPrefix(ap.Func, "vfs_rea") || ap.Raw != "kprobe:"+ap.Func {
			t.Errorf("attach point %q for function %q", ap.Raw, ap.Func)
		}
		raws = append(raws, ap.Raw)
	}
	if !slices.Contains(raws, "kprobe:vfs_read") || !slices.IsSorted(raws) {
		t.Errorf("kprobe:vfs_rea* expanded to %q, want kprobe:vfs_read among sorted names", raws)
	}
}

// fixedCapabilities answers that exactly the features have are available,
// so that a test means the same on every machine.
func fixedCapabilities(have ...capability.Feature) capabilityOf {
	return func(f capability.Feature) capability.Row {
		if slices.Contains(have, f) {
			return capability.Row{Feature: f, Available: true, Evidence: "given by the test"}
		}
		return capability.Row{Feature: f, Evidence: "taken away by the test"}
	}
}

// TestRunUnsupportedKinds checks that kprobes are refused before
// anything is loaded where the machine has none, saying why, and pass where
// it has them. The state is given rather than tried, so the test means the
// same on every machine; Compile then refuses them exactly where the
// capability table says kprobes are missing.
func TestRunUnsupportedKinds(t *testing.T) {
	kprobe := `kprobe:do_nanosleep { exit(); }`
	for _, tc := range []struct {
		src  string
		have []capability.Feature
		// want is what the error says, "" for none: a kernel with
		// kprobes attaches them.
		want string
	}{
		{kprobe, nil, "kprobes are not available: taken away by the test"},
		{kprobe, []capability.Feature{capability.Kprobes, capability.Tracefs}, ""},
	} {
		p, err := lang.Parse("test.bt", tc.src)
		if err != nil {
			t.Fatalf("parse %s: %v", tc.src, err)
		}
		info, err := lang.Analyze(p, lang.Config{}, nil)
		if err != nil {
			t.Fatalf("check %s: %v", tc.src, err)
		}
		err = checkKernelSupport(p, gatherHost(p, Input{has: fixedCapabilities(tc.have...)}))
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s on a host with %v: error %v, want one saying %q", tc.src, tc.have, err, tc.want)
		}
		if r := capability.Of(capability.Kprobes); !r.Available && !r.Unknown {
			if _, err := Compile(info.ResolvedProgram(p), info, Input{Files: &usdt.Files{}}); err == nil {
				t.Errorf("%s: compiled on this host, want it refused", tc.src)
			}
		}
	}
}

// TestCheckHardwareProbes checks that hardware probes are refused, with a
// positioned error naming the missing PMU, exactly on hosts without one.
func TestCheckHardwareProbes(t *testing.T) {
	p, err := lang.Parse("test.bt", "BEGIN { exit(); }\nh:cycles { @ = count(); }")
	if err != nil {
		t.Fatal(err)
	}
	err = checkKernelSupport(p, gatherHost(p, Input{has: fixedCapabilities(capability.Tracefs)}))
	if err == nil || !strings.Contains(err.Error(), "hardware probes are not available: this machine has no hardware PMU") {
		t.Errorf("no PMU: error %v, want a positioned one naming the missing PMU", err)
	}
	if err := checkKernelSupport(p, gatherHost(p, Input{has: fixedCapabilities(capability.PMU)})); err != nil {
		t.Errorf("with a PMU: %v", err)
	}
}

// TestCheckKernelSupportAsksOnlyWhatItNeeds checks that a script of BEGIN
// asks the capability table nothing: start-up tries no feature.
func TestCheckKernelSupportAsksOnlyWhatItNeeds(t *testing.T) {
	p, err := lang.Parse("test.bt", "BEGIN { exit(); } uprobe:/bin/sh:main { }")
	if err != nil {
		t.Fatal(err)
	}
	var asked []capability.Feature
	err = checkKernelSupport(p, hostOf(t, p, Input{has: func(f capability.Feature) capability.Row {
		asked = append(asked, f)
		return capability.Row{Feature: f}
	}}))
	if err != nil || len(asked) != 0 {
		t.Errorf("checkKernelSupport: %v, asked about %v; want no error and nothing asked", err, asked)
	}
}
