package plan

import (
	"testing"

	"github.com/gotrace/gotrace/lang"
)

// TestWhenOf checks when each kind is attached: the order the runtime
// keeps (BEGIN's output before the kernel's probes fire) rests on it.
func TestWhenOf(t *testing.T) {
	for k, want := range map[lang.ProbeKind]When{
		lang.ProbeBegin:      RunByGotrace,
		lang.ProbeEnd:        RunByGotrace,
		lang.ProbeInterval:   RunByGotrace,
		lang.ProbeUSDT:       BeforeBegin,
		lang.ProbeUprobe:     BeforeBegin,
		lang.ProbeUretprobe:  BeforeBegin,
		lang.ProbeProfile:    BeforeBegin,
		lang.ProbeTracepoint: AfterBegin,
		lang.ProbeSoftware:   AfterBegin,
		lang.ProbeHardware:   AfterBegin,
		lang.ProbeWatchpoint: AfterBegin,
		lang.ProbeKprobe:     AfterBegin,
		lang.ProbeKretprobe:  AfterBegin,
		lang.ProbeKfunc:      AfterBegin,
		lang.ProbeKretfunc:   AfterBegin,
	} {
		if got := whenOf(k); got != want {
			t.Errorf("whenOf(%s) = %s, want %s", k, got, want)
		}
	}
}
