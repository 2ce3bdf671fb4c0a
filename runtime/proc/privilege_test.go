package proc

import (
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPrivilegesMissing checks which capabilities a process lacks for
// loading and for uprobes: CAP_SYS_ADMIN stands in for CAP_BPF and
// CAP_PERFMON, and is asked for itself only for uprobes.
func TestPrivilegesMissing(t *testing.T) {
	bit := func(caps ...int) uint64 {
		var b uint64
		for _, c := range caps {
			b |= 1 << uint(c)
		}
		return b
	}
	for _, tc := range []struct {
		name             string
		caps             uint64
		canLoad          bool
		forLoad, forUprb []string
	}{
		{"none", 0, false, []string{"CAP_BPF", "CAP_PERFMON"}, []string{"CAP_BPF", "CAP_PERFMON", "CAP_SYS_ADMIN"}},
		{"bpf and perfmon", bit(unix.CAP_BPF, unix.CAP_PERFMON), true, nil, []string{"CAP_SYS_ADMIN"}},
		{"bpf alone", bit(unix.CAP_BPF), false, []string{"CAP_PERFMON"}, []string{"CAP_PERFMON", "CAP_SYS_ADMIN"}},
		{"sys_admin alone", bit(unix.CAP_SYS_ADMIN), true, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Privileges{Caps: tc.caps}
			if got := p.CanLoad(); got != tc.canLoad {
				t.Errorf("CanLoad() = %v, want %v", got, tc.canLoad)
			}
			if got := p.Missing(false); !slices.Equal(got, tc.forLoad) {
				t.Errorf("Missing(false) = %q, want %q", got, tc.forLoad)
			}
			if got := p.Missing(true); !slices.Equal(got, tc.forUprb) {
				t.Errorf("Missing(true) = %q, want %q", got, tc.forUprb)
			}
		})
	}
}
