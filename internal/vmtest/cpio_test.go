package vmtest

import (
	"bytes"
	"io/fs"
	"strconv"
	"strings"
	"testing"
	"time"
)

// member is one member of a newc archive as readNewc found it.
type member struct {
	name         string
	mode         uint32
	data         string
	rmaj, rmin   uint64
	headerOffset int
}

// readNewc parses a newc archive, checking the alignment WriteCPIO owes
// the kernel's unpacker.
func readNewc(t *testing.T, b []byte) []member {
	t.Helper()
	var ms []member
	field := func(h []byte, i int) uint64 {
		v, err := strconv.ParseUint(string(h[6+8*i:6+8*i+8]), 16, 32)
		if err != nil {
			t.Fatalf("field %d of header %q: %v", i, h, err)
		}
		return v
	}
	align := func(n int) int { return (n + 3) &^ 3 }
	for off := 0; ; {
		if off%4 != 0 || off+110 > len(b) {
			t.Fatalf("header at %d: misaligned or past the end (%d bytes)", off, len(b))
		}
		h := b[off : off+110]
		if string(h[:6]) != newcMagic {
			t.Fatalf("header at %d: magic %q", off, h[:6])
		}
		nameSize, size := int(field(h, 11)), int(field(h, 6))
		name := string(b[off+110 : off+110+nameSize-1])
		dataOff := align(off + 110 + nameSize)
		m := member{name: name, mode: uint32(field(h, 1)), rmaj: field(h, 9), rmin: field(h, 10), headerOffset: off,
			data: string(b[dataOff : dataOff+size])}
		if name == newcTrailer {
			if align(dataOff+size) != len(b) {
				t.Errorf("archive has %d bytes after its trailer", len(b)-align(dataOff+size))
			}
			return ms
		}
		ms = append(ms, m)
		off = align(dataOff + size)
	}
}

func TestWriteCPIO(t *testing.T) {
	tests := []struct {
		name    string
		entries []Entry
		want    []string // name mode(octal) data, in order
		err     string
	}{
		{
			name:    "parents first",
			entries: []Entry{{Path: "/bin/busybox", Mode: 0o755, Data: []byte("ELF")}, {Path: "/init", Mode: 0o755, Data: []byte("#!")}},
			want:    []string{"bin 40755 ", "bin/busybox 100755 ELF", "init 100755 #!"},
		},
		{
			name: "device, link, directory",
			entries: []Entry{
				{Path: "/dev/console", Mode: fs.ModeDevice | fs.ModeCharDevice | 0o600, Major: 5, Minor: 1},
				{Path: "/bin/sh", Mode: fs.ModeSymlink | 0o777, Data: []byte("busybox")},
				{Path: "/tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
			},
			want: []string{"bin 40755 ", "bin/sh 120777 busybox", "dev 40755 ", "dev/console 20600 5:1", "tmp 41777 "},
		},
		{
			name:    "odd sizes stay aligned",
			entries: []Entry{{Path: "/a", Mode: 0o644, Data: []byte("x")}, {Path: "/bb", Mode: 0o644, Data: []byte("yyyyy")}},
			want:    []string{"a 100644 x", "bb 100644 yyyyy"},
		},
		{
			name:    "duplicate",
			entries: []Entry{{Path: "/a", Mode: 0o644}, {Path: "a", Mode: 0o644}},
			err:     "write initramfs: /a is listed twice",
		},
		{
			name:    "root",
			entries: []Entry{{Path: "/", Mode: fs.ModeDir | 0o755}},
			err:     `write initramfs: entry "/" names the root`,
		},
		{
			name:    "named pipe",
			entries: []Entry{{Path: "/p", Mode: fs.ModeNamedPipe | 0o644}},
			err:     "write initramfs: /p: mode prw-r--r-- is not a file, directory, link or character device",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			err := WriteCPIO(&b, tt.entries)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range readNewc(t, b.Bytes()) {
				d := m.data
				if m.mode&0o170000 == sIFCHR {
					d = strconv.FormatUint(m.rmaj, 10) + ":" + strconv.FormatUint(m.rmin, 10)
				}
				got = append(got, m.name+" "+strconv.FormatUint(uint64(m.mode), 8)+" "+d)
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("members:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestInitScript checks the markers /init prints around each case and
// that the console reader takes them back apart, without booting.
func TestInitScript(t *testing.T) {
	m := markers{tag: "@@vmtest-test"}
	g := Guest{Cases: []Case{{Name: "one"}, {Name: "two"}}}
	init := m.initScript(g)
	for _, want := range []string{"echo '@@vmtest-test begin one'", "sh /cases/two 2>&1 </dev/null; echo $? >/tmp/case.rc; } | cat >/tmp/case.out", "poweroff -f"} {
		if !strings.Contains(init, want) {
			t.Errorf("/init lacks %q:\n%s", want, init)
		}
	}
	console := strings.Join([]string{
		"SeaBIOS noise\r",
		"@@vmtest-test booted 4.50",
		"@@vmtest-test begin one",
		"line 1\r",
		"line 2",
		"",
		"@@vmtest-test end one 0",
		"\x1b[?7l@@vmtest-test begin two",
		"no newline",
		"@@vmtest-test end two 3",
		"@@vmtest-test done",
		"[ 5.1] reboot: Power down",
	}, "\n")
	b := &Boot{Results: map[string]Result{}}
	done, err := m.read(strings.NewReader(console), nil, b, time.Now())
	if err != nil || !done {
		t.Fatalf("read: done %v, %v", done, err)
	}
	want := map[string]Result{"one": {Output: "line 1\nline 2\n", Exit: 0}, "two": {Output: "no newline", Exit: 3}}
	for n, w := range want {
		if got := b.Results[n]; got != w {
			t.Errorf("case %s: %+v, want %+v", n, got, w)
		}
	}
	if b.GuestUptime != 4.5 {
		t.Errorf("guest uptime %v, want 4.5", b.GuestUptime)
	}
}
