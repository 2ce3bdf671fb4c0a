package attachpoint

import (
	"math"
	"strconv"
	"strings"
)

// durationUnits are the units of bpftrace 0.24's duration literals (1ms,
// 5s) and of `interval:10ms`, with their length in nanoseconds, longest
// name first where one name starts another.
var durationUnits = []struct {
	name  string
	nanos uint64
}{
	{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9},
	{"m", 60e9}, {"h", 3600e9}, {"d", 86400e9},
}

// DurationUnit returns the length of the unit that s starts with, in
// nanoseconds, and the unit's length in bytes; ok is false when s does
// not start with a unit followed by something that cannot continue a
// name.
func DurationUnit(s string) (nanos uint64, n int, ok bool) {
	for _, u := range durationUnits {
		if rest, found := strings.CutPrefix(s, u.name); found && (rest == "" || !isNameChar(rest[0])) {
			return u.nanos, len(u.name), true
		}
	}
	return 0, 0, false
}

func isNameChar(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// ParseDuration parses a duration written as decimal digits and a unit
// (10ms, 1s) into nanoseconds.
func ParseDuration(s string) (uint64, bool) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	nanos, n, ok := DurationUnit(s[i:])
	if i == 0 || !ok || i+n != len(s) {
		return 0, false
	}
	v, err := strconv.ParseUint(s[:i], 10, 64)
	if err != nil || v > math.MaxUint64/nanos {
		return 0, false
	}
	return v * nanos, true
}
