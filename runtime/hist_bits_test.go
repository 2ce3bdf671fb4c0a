package runtime

import (
	"context"
	"testing"
	"time"

	"github.com/gotrace/gotrace/internal/testenv"
)

// TestRunHistBits runs hist(v, bits) for real and compares its text and
// JSON with bpftrace 0.20's buckets and labels: 2^bits buckets per power
// of two, [v] for the buckets of one value, and a bound m*2^p past
// 2^(bits+1) written m*2^(p mod 10) with a K, M ... for each 10 in p (so
// 2048 = 4*2^9 has none).
func TestRunHistBits(t *testing.T) {
	testenv.RequireRoot(t)
	src := `BEGIN { $i = 0; while ($i < 10) { @h = hist($i, 1); $i++; }
	@h = hist(100, 1); @h = hist(-5, 1); @k["a"] = hist(3000, 2); @k["b"] = hist(2048, 2); exit(); }`
	for _, tc := range []struct{ format, want string }{
		{"text", `


@h: 
(..., 0)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |
[0]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |
[1]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |
[2]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |
[3]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |
[4, 6)                 2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|
[6, 8)                 2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|
[8, 12)                2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|
[12, 16)               0 |                                                    |
[16, 24)               0 |                                                    |
[24, 32)               0 |                                                    |
[32, 48)               0 |                                                    |
[48, 64)               0 |                                                    |
[64, 96)               0 |                                                    |
[96, 128)              1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |

@k[a]: 
[2560, 3072)           1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|

@k[b]: 
[2048, 2560)           1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|

`},
		{"json", `


{"type": "hist", "data": {"@h": [{"max": -1, "count": 1}, {"min": 0, "max": 0, "count": 1}, {"min": 1, "max": 1, "count": 1}, {"min": 2, "max": 2, "count": 1}, {"min": 3, "max": 3, "count": 1}, {"min": 4, "max": 5, "count": 2}, {"min": 6, "max": 7, "count": 2}, {"min": 8, "max": 11, "count": 2}, {"min": 12, "max": 15, "count": 0}, {"min": 16, "max": 23, "count": 0}, {"min": 24, "max": 31, "count": 0}, {"min": 32, "max": 47, "count": 0}, {"min": 48, "max": 63, "count": 0}, {"min": 64, "max": 95, "count": 0}, {"min": 96, "max": 127, "count": 1}]}}
{"type": "hist", "data": {"@k": {"a": [{"min": 2560, "max": 3071, "count": 1}], "b": [{"min": 2048, "max": 2559, "count": 1}]}}}
`},
	} {
		t.Run(tc.format, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			out, stderr, err := runScript(t, ctx, src, Options{Quiet: true, Format: tc.format})
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			if want := tc.want[1:]; out != want {
				t.Errorf("output:\n%q\nwant:\n%q", out, want)
			}
		})
	}
}
