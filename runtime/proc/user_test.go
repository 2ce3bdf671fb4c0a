package proc

import (
	"slices"
	"testing"
)

// TestCredentialEnv checks the environment of a command run as another
// user: HOME, USER and LOGNAME are that user's, at the end, and nothing
// else changes; what the user database does not say is left as it was.
func TestCredentialEnv(t *testing.T) {
	environ := []string{"PATH=/bin", "HOME=/root", "USER=root", "LOGNAME=root", "TERM=xterm"}
	for _, tc := range []struct {
		name string
		cred credential
		want []string
	}{
		{"name and home", credential{name: "bitcoin", home: "/home/bitcoin"},
			[]string{"PATH=/bin", "TERM=xterm", "HOME=/home/bitcoin", "USER=bitcoin", "LOGNAME=bitcoin"}},
		{"name alone", credential{name: "bitcoin"},
			[]string{"PATH=/bin", "HOME=/root", "TERM=xterm", "USER=bitcoin", "LOGNAME=bitcoin"}},
		{"neither", credential{}, environ},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.cred.env(environ); !slices.Equal(got, tc.want) {
				t.Errorf("env = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRunAsExclusive checks that --user and --as-root together are an
// error, and that --as-root alone keeps gotrace's user.
func TestRunAsExclusive(t *testing.T) {
	if _, err := (RunAs{User: "nobody", Root: true}).credential(); err == nil {
		t.Error("--user with --as-root: no error")
	}
	if c, err := (RunAs{Root: true}).credential(); c != nil || err != nil {
		t.Errorf("--as-root: credential %v, error %v; want gotrace's own user", c, err)
	}
}
