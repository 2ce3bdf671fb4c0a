package settings

import "fmt"

// MissingProbes says what a probe that does not exist does to a run: an
// attach point without wildcards in its probe or function name that
// matches nothing. Attach points with wildcards may match nothing in any
// mode, as in bpftrace; a script none of whose attach points match is
// always refused.
type MissingProbes int

const (
	// MissingError refuses the script, naming each missing probe.
	MissingError MissingProbes = iota
	// MissingWarn warns about each missing probe and traces the rest.
	MissingWarn
	// MissingIgnore traces the rest and says nothing.
	MissingIgnore
)

// ParseMissingProbes reads a --missing-probes or missing_probes value:
// error, warn or ignore.
func ParseMissingProbes(s string) (MissingProbes, error) {
	for m, name := range missingProbesNames {
		if s == name {
			return MissingProbes(m), nil
		}
	}
	return 0, fmt.Errorf("invalid missing_probes value %q: valid values are error, warn and ignore", s)
}

var missingProbesNames = [...]string{MissingError: "error", MissingWarn: "warn", MissingIgnore: "ignore"}

// String returns the name ParseMissingProbes reads.
func (m MissingProbes) String() string { return missingProbesNames[m] }
