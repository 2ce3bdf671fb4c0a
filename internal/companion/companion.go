// Package companion finds gotrace's companion programs: gotrace-metrics
// and gotrace-nats, the binaries that carry the network code (HTTP, TLS,
// NATS) so that gotrace itself links none of it and starts small.
//
// Every companion is looked for in the same order, so that an installed
// gotrace, a build tree and a test binary all agree on which program runs:
// the environment variable that names it, then the directory of the running
// gotrace (make install and the Debian package put them side by side), then
// PATH.
package companion

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Path returns the program to run for the companion name (for example
// "gotrace-nats"), or an error saying every place it looked. env names the
// environment variable that overrides the search; its value is used as
// given, so that tests can point it at a binary of their own.
func Path(name, env string) (string, error) {
	if p := os.Getenv(env); p != "" {
		return p, nil
	}
	beside := "beside gotrace"
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		beside = "in " + filepath.Dir(self)
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("find %s: not named by $%s, not %s and not on PATH (make install and the package install it next to gotrace; go build ./cmd/%s builds it)", name, env, beside, name)
}
