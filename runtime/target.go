package runtime

import (
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/runtime/plan"
	"github.com/gotrace/gotrace/usdt"
)

// NewHost returns the lang.Host of a trace of process pid (-p, 0 for none)
// or of command (-c, "" for none): a bare target is also looked for among
// the objects the process maps or the command loads at start-up.
func NewHost(pid int, command string) lang.Host {
	h := &usdt.Host{PID: pid}
	if command != "" {
		h.Loaded = func() []string {
			// A command that cannot be found is Run's error to report.
			var files usdt.Files
			defer files.Close()
			objs, _ := plan.CommandObjects(command, &files)
			return objs
		}
	}
	return &host{Host: h}
}
