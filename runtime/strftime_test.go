package runtime

import (
	"testing"
	"time"
)

func TestStrftime(t *testing.T) {
	tm := time.Date(2026, time.March, 7, 14, 5, 9, 123456789, time.UTC)
	for _, tc := range []struct{ format, want string }{
		{"%H:%M:%S\n", "14:05:09\n"},
		{"%H:%M:%S.%f", "14:05:09.123456"},
		{"%Y-%m-%d %T", "2026-03-07 14:05:09"},
		{"%a %b %e %I%p %j %y %s", "Sat Mar  7 02PM 066 26 1772892309"},
		{"100%% %q", "100% %q"},
		{"trailing %", "trailing %"},
	} {
		if got := strftime(tc.format, tm); got != tc.want {
			t.Errorf("strftime(%q) = %q, want %q", tc.format, got, tc.want)
		}
	}
}
