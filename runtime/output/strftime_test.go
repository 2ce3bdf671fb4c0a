package output

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
		// Every conversion, as GNU date prints it.
		{"%a|%A|%b|%h|%B", "Sat|Saturday|Mar|Mar|March"},
		{"%c|%D|%F|%x", "Sat Mar  7 14:05:09 2026|03/07/26|2026-03-07|03/07/26"},
		{"%d|%e|%H|%I|%j|%m|%M|%S", "07| 7|14|02|066|03|05|09"},
		{"%n|%t|%p|%r|%R|%T|%X", "\n|\t|PM|02:05:09 PM|14:05|14:05:09|14:05:09"},
		{"%s|%y|%Y|%z|%Z|%f", "1772892309|26|2026|+0000|UTC|123456"},
	} {
		if got := Strftime(tc.format, tm); got != tc.want {
			t.Errorf("Strftime(%q) = %q, want %q", tc.format, got, tc.want)
		}
	}
	// Midnight on the first day of the year.
	jan1 := time.Date(2026, time.January, 1, 0, 5, 9, 0, time.UTC)
	if got, want := Strftime("%I %p %r|%e|%j", jan1), "12 AM 12:05:09 AM| 1|001"; got != want {
		t.Errorf("strftime at midnight = %q, want %q", got, want)
	}
}

// TestStrftimeMicroseconds checks bpftrace's %f: only a bare %f is the
// microseconds, as in bpftrace 0.17 (%3f and %-f print as written there
// too); %%f is a percent sign and an f, where 0.17 fails ("strftime
// returned 0").
func TestStrftimeMicroseconds(t *testing.T) {
	tm := time.Date(2026, time.March, 7, 14, 5, 9, 4567, time.UTC)
	for _, tc := range []struct{ format, want string }{
		{"%f", "000004"},
		{"a%fb", "a000004b"},
		{"%S.%f", "09.000004"},
		{"%3f|%-f", "%3f|%-f"},
		{"%%f", "%f"},
		{"%%%f", "%000004"},
	} {
		if got := Strftime(tc.format, tm); got != tc.want {
			t.Errorf("Strftime(%q) = %q, want %q", tc.format, got, tc.want)
		}
	}
}
