package runtime

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gotrace/gotrace/internal/testenv"
	"github.com/gotrace/gotrace/lang"
)

// TestRunBigStrings checks str() and buf() of 64 KiB end to end, in text
// and in JSON: dd writes 70,000 bytes from one buffer, and every byte up
// to the string size comes through the ring buffer (a record of more than
// 32 KiB, built in the big scratch map).
func TestRunBigStrings(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireFile(t, "/sys/kernel/tracing/events/syscalls/sys_enter_write")
	const strLen = 64 << 10
	data := make([]byte, 70000)
	for i := range data {
		data[i] = 'a' + byte(i%26)
	}
	file := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
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
			p := checkScript(t, src, lang.Config{StrLen: strLen, Child: true, Host: NewHost(0, command), Kernel: NewKernel()})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			out, errOut := newSyncBuffer(""), newSyncBuffer("")
			opts := Options{StrLen: strLen, Format: tc.format, Out: out, Err: errOut, Command: command}
			if err := Run(ctx, p, opts); err != nil {
				t.Fatalf("%v\n%s", err, errOut)
			}
			if got := out.String(); got != tc.want {
				t.Errorf("output of %d bytes, want %d:\n%.300q...", len(got), len(tc.want), got)
			}
		})
	}
}
