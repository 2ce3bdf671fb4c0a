package output

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gotrace/gotrace/internal/testenv"
)

// TestStrftimeGlibc formats instants in several zones with every
// conversion, modifier, flag and width, here and with the C library's
// strftime (testdata/glibc_strftime.c, built with gcc), which bpftrace
// calls, and expects the same bytes. %f is bpftrace's own (TestStrftime).
func TestStrftimeGlibc(t *testing.T) {
	gcc := testenv.RequireTool(t, "gcc")
	bin := filepath.Join(t.TempDir(), "glibc_strftime")
	if out, err := exec.Command(gcc, "-O", "-o", bin, "testdata/glibc_strftime.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}

	var formats []string
	for c := byte(' '); c <= '~'; c++ {
		if c == 'f' || c == '\\' {
			continue
		}
		for _, modifier := range []string{"", "E", "O"} {
			for _, flag := range []string{"", "_", "-", "0", "^", "#", "^#", "_^"} {
				for _, width := range []string{"", "1", "3", "8", "12"} {
					formats = append(formats, "%"+flag+width+modifier+string(c))
				}
			}
		}
	}
	formats = append(formats, "%", "x%", "%5", "%E", "%_", "%-5", "%%%", "%c|%x|%X|%D|%r|%R|%T|%F",
		"at %H:%M:%S on %A, %d %B %Y (%Z, %z)", "%Ey%EY%EC%Ex%EX%Ec", "%Od%Oe%OH%OI%Om%OM%OS%Ou%OU%OV%Ow%OW%Oy")

	zones := []string{"UTC", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe", "America/St_Johns"}
	instants := []time.Time{
		time.Unix(0, 0),
		time.Date(2026, time.March, 7, 14, 5, 9, 0, time.UTC),
		time.Date(2024, time.December, 30, 0, 0, 0, 0, time.UTC), // ISO week 1 of 2025
		time.Date(2021, time.January, 3, 12, 0, 0, 0, time.UTC),  // ISO week 53 of 2020
		time.Date(2000, time.February, 29, 23, 59, 59, 0, time.UTC),
		time.Date(1999, time.December, 31, 12, 30, 0, 0, time.UTC),
		time.Date(2027, time.January, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2038, time.January, 19, 3, 14, 8, 0, time.UTC),
	}

	var input bytes.Buffer
	type query struct {
		format string
		tm     time.Time
	}
	var queries []query
	for _, zone := range zones {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatalf("load zone %s: %v", zone, err)
		}
		for _, tm := range instants {
			for _, f := range formats {
				fmt.Fprintf(&input, "%d %s %s\n", tm.Unix(), zone, strings.ReplaceAll(f, "\n", `\n`))
				queries = append(queries, query{f, tm.In(loc)})
			}
		}
	}
	cmd := exec.Command(bin)
	cmd.Stdin = &input
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("run %s: %v", bin, err)
	}
	r := bufio.NewReader(bytes.NewReader(out))
	failed := 0
	reported := map[string]bool{}
	for _, q := range queries {
		lenText, err := r.ReadString(':')
		if err != nil {
			t.Fatalf("read glibc's result: %v", err)
		}
		n, err := strconv.Atoi(strings.TrimSuffix(lenText, ":"))
		if err != nil {
			t.Fatalf("read glibc's result length: %v", err)
		}
		want := make([]byte, n+1)
		if _, err := io.ReadFull(r, want); err != nil {
			t.Fatalf("read glibc's result: %v", err)
		}
		if got := Strftime(q.format, q.tm); got != string(want[:n]) {
			// One report per conversion (and modifier) is enough.
			failed++
			if key := q.format[len(q.format)-min(2, len(q.format)):]; !reported[key] {
				reported[key] = true
				t.Errorf("Strftime(%q) at %s = %q, glibc %q", q.format, q.tm.Format(time.RFC3339), got, want[:n])
			}
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d differ", failed, len(queries))
	}
}
