package runtime

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gotrace/gotrace/internal/settings"
	"github.com/gotrace/gotrace/internal/testenv"
	"github.com/gotrace/gotrace/lang"
)

// TestRunBigStrings checks str() and buf() of 64 KiB end to end, in text
// and in JSON: dd writes 70,000 bytes from one buffer, and every byte up
// to the string size comes through the ring buffer (a record of more than
// 32 KiB, built in the big scratch map). The bufs' cuts are counted.
func TestRunBigStrings(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireFile(t, "/sys/kernel/tracing/events/syscalls/sys_enter_write")
	const strLen = 64 << 10
	data, file := letterFile(t, 70000)
	src := `tracepoint:syscalls:sys_enter_write /pid == cpid/ {
	printf("%s|\n", str(args->buf));
	printf("%rx|\n", buf(args->buf, args->count));
	print(buf(args->buf, args->count));
}`
	var hex strings.Builder
	for _, b := range data[:strLen] {
		fmt.Fprintf(&hex, `\x%02x`, b)
	}
	str, bufText := string(data[:strLen-1]), string(data[:strLen])
	for _, tc := range []struct {
		format string
		want   string
	}{
		{"text", "Attaching 1 probe...\n" + str + "|\n" + hex.String() + "|\n" + bufText + "\n\n\n"},
		{"json", `{"type": "attached_probes", "data": {"probes": 1}}` + "\n" +
			`{"type": "printf", "data": "` + str + `|\n"}` + "\n" +
			`{"type": "printf", "data": "` + strings.ReplaceAll(hex.String(), `\`, `\\`) + `|\n"}` + "\n" +
			`{"type": "value", "data": "` + bufText + `"}` + "\n\n\n"},
	} {
		t.Run(tc.format, func(t *testing.T) {
			command := fmt.Sprintf("dd if=%s of=/dev/null bs=70000 count=1 status=none", file)
			p, info := checkScript(t, src, lang.Config{Values: settings.Values{StrLen: strLen}, Child: true, Host: NewHost(0, command), Kernel: NewKernel()})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			out, errOut := newSyncBuffer(""), newSyncBuffer("")
			opts := Options{Values: settings.Values{StrLen: strLen}, Format: tc.format, Out: out, Err: errOut, Command: command}
			if err := Run(ctx, p, info, opts); err != nil {
				t.Fatalf("%v\n%s", err, errOut)
			}
			if got := out.String(); got != tc.want {
				t.Errorf("output of %d bytes, want %d:\n%.300q...", len(got), len(tc.want), got)
			}
			// Two reads of 70,000 bytes into 65,536 (the string's cut
			// is not counted).
			if want := "WARNING: buf() was asked for more bytes than it holds and was cut to its size (2 times; max_buflen sets it, up to 4000000 bytes)\n"; errOut.String() != want {
				t.Errorf("stderr %q, want %q", errOut, want)
			}
		})
	}
}

// TestRunPackedBufs checks that a buf of more than 1024 bytes in a printf
// or print() record takes only its length in the ring buffer, and that a
// string after it comes through: with bufs of 4,000,000 bytes a record's full
// size is more than the 1 MiB ring holds, and every one of dd's 100
// writes of 1000 bytes still arrives.
func TestRunPackedBufs(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireFile(t, "/sys/kernel/tracing/events/syscalls/sys_enter_write")
	data, file := letterFile(t, 100000)
	command := fmt.Sprintf("dd if=%s of=/dev/null bs=1000 count=100 status=none", file)
	src := `tracepoint:syscalls:sys_enter_write /pid == cpid/ { printf("%r|%s|%d\n", buf(args->buf, args->count), str(args->buf, 4), args->count); print(buf(args->buf, args->count)); }`
	p, info := checkScript(t, src, lang.Config{Values: settings.Values{BufLen: settings.MaxStrLen}, Child: true, Host: NewHost(0, command), Kernel: NewKernel()})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, errOut := newSyncBuffer(""), newSyncBuffer("")
	opts := Options{Values: settings.Values{PerfRBPages: 256}, Out: out, Err: errOut, Command: command}
	if err := Run(ctx, p, info, opts); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	// Each write printed, then print() of it.
	want := map[string]int{}
	for i := 0; i < len(data); i += 1000 {
		want[string(data[i:i+1000])+"|"+string(data[i:i+4])+"|1000"]++
		want[string(data[i:i+1000])]++
	}
	got := 0
	for _, line := range strings.Split(out.String(), "\n") {
		if want[line] > 0 {
			got++
			want[line]--
		}
	}
	if got != 200 || errOut.String() != "" {
		t.Errorf("%d of 200 lines; stderr %q; output %.300q", got, errOut, out)
	}
}

// letterFile writes n bytes of the alphabet over and over to a file and
// returns them and the file's path.
func letterFile(t *testing.T, n int) ([]byte, string) {
	t.Helper()
	data := make([]byte, n)
	for i := range data {
		data[i] = 'a' + byte(i%26)
	}
	file := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return data, file
}
