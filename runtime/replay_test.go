package runtime

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/codegen/layout"
	"github.com/gotrace/gotrace/internal/printf"
	"github.com/gotrace/gotrace/internal/testenv"
	"github.com/gotrace/gotrace/runtime/capture"
)

// replayScript prints, maps and exits in BEGIN: its output is the same at
// every run.
const replayScript = `BEGIN {
	printf("line %d %s\n", 1, "one");
	printf("line %d %s\n", 2, "two");
	@c["a"] = count(); @c["b"] = count(); @c["b"] = count();
	@h = hist(100);
	print(@c);
	clear(@c);
	@c["z"] = count();
	printf("line %d %s\n", 3, "three");
	exit();
}
END { printf("end\n"); }`

// replayed replays capture in format, returning what it printed and its
// error.
func replayed(capture []byte, format string) (string, error) {
	var out, errOut bytes.Buffer
	err := Replay(bytes.NewReader(capture), Options{Out: &out, Err: &errOut, Format: format})
	return out.String(), err
}

func TestCaptureReplay(t *testing.T) {
	testenv.RequireRoot(t)
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			live, _, err := runScript(t, context.Background(), replayScript, Options{Format: format})
			if err != nil {
				t.Fatal(err)
			}
			var file bytes.Buffer
			quiet, _, err := runScript(t, context.Background(), replayScript, Options{Format: format, Capture: &file})
			if err != nil {
				t.Fatal(err)
			}
			if quiet != "" {
				t.Errorf("the capturing run printed %q", quiet)
			}
			got, err := replayed(file.Bytes(), format)
			if err != nil {
				t.Fatal(err)
			}
			if got != live {
				t.Errorf("replay:\n%s\nlive:\n%s", got, live)
			}
		})
	}
}

// TestReplayCorrupt damages a capture in each way a file gets damaged:
// the replay prints what came before the damage, then says where it is.
func TestReplayCorrupt(t *testing.T) {
	testenv.RequireRoot(t)
	var file bytes.Buffer
	if _, _, err := runScript(t, context.Background(), replayScript, Options{Capture: &file}); err != nil {
		t.Fatal(err)
	}
	good := file.Bytes()
	full, err := replayed(good, "text")
	if err != nil {
		t.Fatal(err)
	}
	// Damage at the second printf's record leaves the first line.
	second := -1
	for _, off := range recordOffsets(t, good) {
		if bytes.Contains(good[off:off+9+int(binary.LittleEndian.Uint32(good[off+1:]))], []byte("two\x00")) {
			second = off
			break
		}
	}
	if second < 0 {
		t.Fatal("no record of the second printf")
	}
	tests := []struct {
		name   string
		damage func([]byte) []byte
		// msg is in the error; prefix is the output that must come
		// before it, "" for none at all.
		msg, prefix string
	}{
		{"cut at a record boundary", func(b []byte) []byte { return b[:second] },
			"cut short: it ends without its end record", "Attaching 2 probes...\nline 1 one\n"},
		{"cut inside a record", func(b []byte) []byte { return b[:second+12] },
			"event record: cut short", "Attaching 2 probes...\nline 1 one\n"},
		{"cut inside a record's header", func(b []byte) []byte { return b[:second+3] },
			"a record's header is cut short after 3 of 9 bytes", "Attaching 2 probes...\nline 1 one\n"},
		{"no end record", func(b []byte) []byte { return b[:len(b)-9] },
			"cut short", strings.TrimSuffix(full, "\n")},
		{"flipped byte in a record", func(b []byte) []byte { b[second+9+3] ^= 0x40; return b },
			"event record: its checksum does not match", "Attaching 2 probes...\nline 1 one\n"},
		{"flipped byte in a length", func(b []byte) []byte { b[second+4] ^= 0x80; return b },
			"", "Attaching 2 probes...\nline 1 one\n"},
		{"unknown record kind", func(b []byte) []byte { b[second] = 99; return b },
			"unknown record kind 99", "Attaching 2 probes...\nline 1 one\n"},
		{"flipped byte in the header", func(b []byte) []byte { b[30] ^= 1; return b },
			"the header's checksum does not match", ""},
		{"wrong magic", func(b []byte) []byte { b[0] = 'X'; return b },
			`not a gotrace capture: the file does not start with "GOTRACE\x00"`, ""},
		{"a text file", func([]byte) []byte { return []byte("Attaching 1 probe...\n") },
			"not a gotrace capture", ""},
		{"empty", func([]byte) []byte { return nil }, "the file is empty", ""},
		{"wrong version", func(b []byte) []byte { b[8] = 2; return b },
			"capture format version 2: this gotrace reads version 1", ""},
		{"header cut short", func(b []byte) []byte { return b[:40] }, "the header is cut short", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			damaged := tt.damage(bytes.Clone(good))
			got, err := replayed(damaged, "text")
			var ce *capture.CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v, want a corrupt capture", err)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q, want it to say %q", err, tt.msg)
			}
			if !strings.HasPrefix(got, tt.prefix) || !strings.HasPrefix(full, got) {
				t.Errorf("replay printed %q: want a prefix of the whole capture's output starting with %q", got, tt.prefix)
			}
		})
	}
}

// recordOffsets returns where each record of a good capture starts.
func recordOffsets(t *testing.T, b []byte) []int {
	t.Helper()
	off := len(capture.Magic) + 12 + int(binary.LittleEndian.Uint32(b[len(capture.Magic)+4:]))
	var offs []int
	for off < len(b) {
		offs = append(offs, off)
		off += 9 + int(binary.LittleEndian.Uint32(b[off+1:]))
	}
	if off != len(b) || len(offs) < 4 {
		t.Fatalf("capture of %d bytes has records at %v", len(b), offs)
	}
	return offs
}

// syntheticCapture is a capture written without a kernel: printf records
// with a resolved symbol, prints of a count map, a hist and a record with
// a user name, time(), cat() and system() with their inputs, the maps at
// exit.
func syntheticCapture(tb testing.TB) []byte {
	parts, err := printf.Parse("%d %s %s\n")
	if err != nil {
		tb.Fatal(err)
	}
	literal, err := printf.Parse("/not/read/again")
	if err != nil {
		tb.Fatal(err)
	}
	key := layout.Field{Kind: layout.Int, Size: 8}
	u64Field := key
	h := &capture.Header{
		File: "s.bt", Source: "BEGIN {}",
		Events: []codegen.Event{
			{Kind: codegen.EventPrintf, Parts: parts, Args: []layout.Field{
				{Kind: layout.Int, Size: 8, Signed: true},
				{Kind: layout.String, Offset: 8, Size: 16},
				{Kind: layout.Usym, Offset: 24, Size: 8}}},
			{Kind: codegen.EventPrint, Map: "@c"},
			{Kind: codegen.EventExit},
			{Kind: codegen.EventTime, Format: "%Y\n"},
			{Kind: codegen.EventCat, Parts: literal},
			{Kind: codegen.EventSystem, Parts: literal},
			{Kind: codegen.EventPrint, Args: []layout.Field{{Kind: layout.Tuple, Size: 16, Elems: []layout.Field{u64Field, {Kind: layout.Username, Offset: 8, Size: 8}}, Names: []string{"n", "user"}}}},
			{Kind: codegen.EventPrint, Map: "@h"},
		},
		Maps: []codegen.Map{
			{Name: "@c", Kind: layout.MapCount, KeyFields: []layout.Field{key}, KeySize: 8, ValueSize: 8, PerCPU: true},
			{Name: "@h", Kind: layout.MapHist, KeySize: 8, ValueSize: 8, PerCPU: true},
		},
		Probes: []string{"BEGIN"},
	}
	var b bytes.Buffer
	w, err := capture.NewWriter(&b, h)
	if err != nil {
		tb.Fatal(err)
	}
	event := func(id uint64, fields ...[]byte) []byte {
		rec := binary.LittleEndian.AppendUint64(nil, id)
		for _, f := range fields {
			rec = append(rec, f...)
		}
		return rec
	}
	u64 := func(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
	str := func(s string) []byte { return append([]byte(s), make([]byte, 16-len(s))...) }
	entries := encodeEntries([]*mapEntry{{Key: u64(7), Count: 3}, {Key: u64(9), Count: 1}})
	w.WriteUint64(capture.Attached, 1)
	w.WriteUint64(capture.Clock, 1_700_000_000_000_000_000)
	w.Write(capture.Event, event(0, u64(5), str("five"), u64(0x1000)))
	w.Write(capture.Input, []byte("main+4"))
	w.Write(capture.Event, event(1))
	w.Write(capture.Entries, entries)
	w.Write(capture.Event, event(0, u64(^uint64(2)), str("min"), u64(0x2000)))
	w.Write(capture.Input, []byte("0x2000"))
	w.Write(capture.Event, event(3))
	w.Write(capture.Input, []byte("1700000000000000000"))
	w.Write(capture.Event, event(4))
	w.Write(capture.Input, []byte(""))
	w.Write(capture.Input, []byte("cat text\n"))
	w.Write(capture.Event, event(5))
	w.Write(capture.Input, []byte("system text\n"))
	w.Write(capture.Event, event(6, u64(1), u64(0)))
	w.Write(capture.Input, []byte("root"))
	w.Write(capture.Event, event(7))
	w.Write(capture.Entries, encodeEntries([]*mapEntry{{Buckets: []uint64{0, 1, 0, 2}}}))
	w.Write(capture.Event, event(2))
	w.Write(capture.ExitMaps, nil)
	w.Write(capture.Entries, entries)
	w.Write(capture.Entries, encodeEntries(nil))
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

func TestReplaySynthetic(t *testing.T) {
	got, err := replayed(syntheticCapture(t), "text")
	if err != nil {
		t.Fatal(err)
	}
	want := "Attaching 1 probe...\n5 five main+4\n@c[9]: 1\n@c[7]: 3\n-3 min 0x2000\n" +
		// time(), cat() and system() print what was recorded: the
		// file is not read and the command not run again.
		"2023\ncat text\nsystem text\n{ .n = 1, .user = root }\n" +
		"@h: \n[0]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n" +
		"[1]                    0 |                                                    |\n" +
		"[2, 4)                 2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n\n" +
		"\n\n@c[9]: 1\n@c[7]: 3\n\n"
	if got != want {
		t.Errorf("replay:\n%q\nwant:\n%q", got, want)
	}
}

// reseal recomputes the checksums of a capture's header and records, as
// far as its lengths hold, so that fuzzed payloads get past them.
func reseal(b []byte) []byte {
	b = bytes.Clone(b)
	fixed := len(capture.Magic) + 12
	if len(b) < fixed {
		return b
	}
	size := int(binary.LittleEndian.Uint32(b[len(capture.Magic)+4:]))
	if size > len(b)-fixed {
		return b
	}
	table := crc32.MakeTable(crc32.Castagnoli)
	binary.LittleEndian.PutUint32(b[len(capture.Magic)+8:], crc32.Checksum(b[fixed:fixed+size], table))
	for off := fixed + size; off+9 <= len(b); {
		n := int(binary.LittleEndian.Uint32(b[off+1:]))
		if n > len(b)-off-9 {
			break
		}
		sum := crc32.Update(crc32.Update(0, table, b[off:off+1]), table, b[off+9:off+9+n])
		binary.LittleEndian.PutUint32(b[off+5:], sum)
		off += 9 + n
	}
	return b
}

// FuzzReplay replays damaged captures, as read and with their checksums
// made to match: a replay never panics, and an error it returns for a
// capture's bytes is a *capture.CorruptError.
func FuzzReplay(f *testing.F) {
	good := syntheticCapture(f)
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte(capture.Magic))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, file := range [][]byte{b, reseal(b)} {
			_, err := replayed(file, "text")
			var ce *capture.CorruptError
			var status ExitStatus
			if err != nil && !errors.As(err, &ce) && !errors.As(err, &status) && !strings.HasPrefix(err.Error(), "decode record:") {
				t.Errorf("error %v is not a corrupt capture's", err)
			}
		}
	})
}

// TestCaptureSIGUSR1 captures the maps SIGUSR1 prints: their entries are
// recorded at each signal, and the replay prints them as the live run
// does (TestRunSIGUSR1), though the trace went on after.
func TestCaptureSIGUSR1(t *testing.T) {
	testenv.RequireRoot(t)
	p, info := compileScript(t, `BEGIN { @a = 1; @c["x"] = count(); @s = stats(3); } interval:ms:20 { @c["y"] = count(); printf("tick\n"); }`)
	file := newSyncBuffer("")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	attached := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, p, info, Options{Capture: file, Attached: func() { close(attached) }})
	}()
	select {
	case <-attached:
	case err := <-done:
		t.Fatalf("Run: %v", err)
	}
	// ticked waits until the capture so far replays as prints prints of
	// the maps followed by a tick: @c["y"] has grown since the last.
	ticked := func(prints int) {
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			// The capture is read while it is written: its end may be
			// a record cut short, reported after what came before it.
			text, _ := replayed([]byte(file.String()), "text")
			if strings.Count(text, "@a: 1\n") == prints && strings.HasSuffix(text, "tick\n") {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("no print %d followed by a tick:\n%s", prints, text)
			}
		}
	}
	for i := range 2 {
		if err := syscall.Kill(syscall.Getpid(), syscall.SIGUSR1); err != nil {
			t.Fatal(err)
		}
		ticked(i + 1)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	got, err := replayed([]byte(file.String()), "text")
	if err != nil {
		t.Fatal(err)
	}
	// Three prints of every map: two signals and the exit, @c["y"]
	// counting up in between (the ticks' lines aside).
	got = strings.ReplaceAll(got, "tick\n", "")
	prints := regexp.MustCompile(`@a: 1\n@c\[x\]: 1\n(?:@c\[y\]: (\d+)\n)?@s: count 1, average 3, total 3\n\n`).FindAllStringSubmatch(got, -1)
	if !strings.HasPrefix(got, "Attaching 2 probes...\n") || len(prints) != 3 || !strings.Contains(got, "\n\n\n@a: 1\n") {
		t.Fatalf("replay:\n%s", got)
	}
	if prints[0][1] == prints[2][1] {
		t.Errorf("@c[y] is %s at the first print and at exit: the prints are not of their moment", prints[0][1])
	}
}
