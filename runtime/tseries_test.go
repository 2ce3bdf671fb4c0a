package runtime

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gotrace/gotrace/internal/settings"
	"github.com/gotrace/gotrace/internal/testenv"
)

// TestRunTseries runs tseries() for real, with the time taken from the map
// @ts (TimeMap, bpftrace's BPFTRACE_DUMMY_TS_MAP) so that the intervals are
// known, and compares the text chart and the JSON with what bpftrace 0.24
// prints: the last intervals up to the latest one of any key, - (text) or
// nothing (JSON) for an interval without a value, the starts in local time
// (text) or UTC (JSON).
func TestRunTseries(t *testing.T) {
	testenv.RequireRoot(t)
	// Epoch 0's hour in the local time zone, which the text chart shows.
	hour := time.Unix(0, 0).Local().Format("15")
	// Values -2 to 2, one every other 100 ms from 100 ms: the last five
	// intervals (500 ms to 900 ms) hold 0, 1 and 2.
	gaps := `BEGIN { @ts = (uint64)100000000; @c = -2; $i = 0;
	while ($i < 5) { @ = tseries(@c, 100ms, 5); @ts += 200000000; @c += 1; $i++; }
	delete(@ts); delete(@c); exit(); }`
	// Two keys keeping the largest value of each microsecond.
	keyed := `BEGIN { @ts = (uint64)1000; $i = 0;
	while ($i < 6) { @s["a"] = tseries($i, 1us, 4, "max"); @s["a"] = tseries(1, 1us, 4, "max"); @s["b"] = tseries(-$i, 1us, 4, "max"); @ts += 1000; $i++; }
	delete(@ts); exit(); }`
	for _, tc := range []struct {
		name, src, format, want string
	}{
		{"gaps", gaps, "text", `


@:
             0                                                   2
hh:mm:ss.ms  |___________________________________________________|
HH:00:00.500 *                                                   | 0
HH:00:00.600 |                                                   | -
HH:00:00.700 |                         *                         | 1
HH:00:00.800 |                                                   | -
HH:00:00.900 |                                                   * 2
             v___________________________________________________v
             0                                                   2



`},
		{"gaps json", gaps, "json", `


{"type": "tseries", "data": {"@": [{"interval_start":"1970-01-01 00:00:00.500000000","value":0},{"interval_start":"1970-01-01 00:00:00.700000000","value":1},{"interval_start":"1970-01-01 00:00:00.900000000","value":2}]}}
`},
		{"keyed", keyed, "text", `


@s[a]:
                2                                                   5
hh:mm:ss.μs    |___________________________________________________|
HH:00:00.000003 *                                                   | 2
HH:00:00.000004 |                *                                  | 3
HH:00:00.000005 |                                 *                 | 4
HH:00:00.000006 |                                                   * 5
                v___________________________________________________v
                2                                                   5

@s[b]:
                -5                                                 -2
hh:mm:ss.μs    |___________________________________________________|
HH:00:00.000003 |                                                   * -2
HH:00:00.000004 |                                 *                 | -3
HH:00:00.000005 |                *                                  | -4
HH:00:00.000006 *                                                   | -5
                v___________________________________________________v
                -5                                                 -2


`},
		{"keyed json", keyed, "json", `


{"type": "tseries", "data": {"@s": {"a": [{"interval_start":"1970-01-01 00:00:00.000003000","value":2},{"interval_start":"1970-01-01 00:00:00.000004000","value":3},{"interval_start":"1970-01-01 00:00:00.000005000","value":4},{"interval_start":"1970-01-01 00:00:00.000006000","value":5}], "b": [{"interval_start":"1970-01-01 00:00:00.000003000","value":-2},{"interval_start":"1970-01-01 00:00:00.000004000","value":-3},{"interval_start":"1970-01-01 00:00:00.000005000","value":-4},{"interval_start":"1970-01-01 00:00:00.000006000","value":-5}]}}}
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			out, stderr, err := runScript(t, ctx, tc.src, Options{Quiet: true, Format: tc.format, Values: settings.Values{TimeMap: "@ts"}})
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			want := strings.ReplaceAll(tc.want[1:], "HH", hour)
			if out != want {
				t.Errorf("output:\n%s\nwant:\n%s", out, want)
			}
		})
	}
}
