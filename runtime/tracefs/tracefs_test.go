package tracefs

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/internal/testenv"
)

func TestParseFormat(t *testing.T) {
	const text = `name: block_rq_issue
ID: 1384
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:const char * filename;	offset:24;	size:8;	signed:0;
	field:char rwbs[10];	offset:34;	size:10;	signed:0;
	field:__data_loc char[] cmd;	offset:60;	size:4;	signed:0;
	field:long prev_state;	offset:64;	size:8;	signed:1;

print fmt: "%s", REC->rwbs
`
	f, err := ParseFormat([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	want := []Field{
		{Name: "common_type", Type: "unsigned short", Offset: 0, Size: 2, Common: true},
		{Name: "common_pid", Type: "int", Offset: 4, Size: 4, Signed: true, Common: true},
		{Name: "filename", Type: "const char *", Offset: 24, Size: 8},
		{Name: "rwbs", Type: "char", Offset: 34, Size: 10, ArrayLen: 10},
		{Name: "cmd", Type: "char", Offset: 60, Size: 4, DataLoc: true, DataLocArray: true},
		{Name: "prev_state", Type: "long", Offset: 64, Size: 8, Signed: true},
	}
	if f.ID != 1384 || len(f.Fields) != len(want) {
		t.Fatalf("got ID %d and %d fields: %+v", f.ID, len(f.Fields), f.Fields)
	}
	for i, w := range want {
		if f.Fields[i] != w {
			t.Errorf("field %d: got %+v, want %+v", i, f.Fields[i], w)
		}
	}
	decls := []string{"unsigned short common_type", "int common_pid", "const char * filename", "char rwbs[10]", "__data_loc char[] cmd", "long prev_state"}
	for i, d := range decls {
		if got := f.Fields[i].Decl(); got != d {
			t.Errorf("Decl %d = %q, want %q", i, got, d)
		}
	}
}

func TestParseFormatErrors(t *testing.T) {
	for _, text := range []string{
		"ID: x\n",
		"field:int a;\toffset:1;\n",
		"field:int a;\toffset:-1;\tsize:4;\n",
		"field:int a[3];\toffset:0;\tsize:4;\n",
		"field:;\toffset:0;\tsize:4;\n",
		"field:int a[;\toffset:0;\tsize:4;\n",
	} {
		if _, err := ParseFormat([]byte(text)); err == nil {
			t.Errorf("ParseFormat(%q) succeeded", text)
		}
	}
}

func FuzzParseFormat(f *testing.F) {
	f.Add([]byte("ID: 1\nformat:\n\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"))
	f.Add([]byte("\tfield:__data_loc char[] name;\toffset:8;\tsize:4;\tsigned:0;\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fm, err := ParseFormat(data)
		if err != nil {
			return
		}
		for _, fl := range fm.Fields {
			if fl.Name == "" || fl.Type == "" || fl.Size < 0 || fl.Offset < 0 {
				t.Fatalf("accepted a bad field %+v", fl)
			}
		}
	})
}

// mounted returns the tracefs directory, mounting it as the project's
// set-up does when the test runs as root.
func mounted(t *testing.T) string {
	testenv.RequireRoot(t)
	dir, err := Find(true)
	if err != nil {
		testenv.Unavailable(t, "tracefs: %v", err)
	}
	return dir
}

// TestEveryFormat parses the format file of every tracepoint of this
// kernel.
func TestEveryFormat(t *testing.T) {
	dir := mounted(t)
	events, err := Events(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) < 100 {
		t.Fatalf("only %d tracepoints listed", len(events))
	}
	for _, ev := range events {
		f, err := ReadFormat(dir, ev)
		if err != nil {
			t.Error(err)
			continue
		}
		if f.ID == 0 || len(f.Fields) == 0 {
			t.Errorf("%s: ID %d, %d fields", ev, f.ID, len(f.Fields))
		}
	}
	if _, err := ReadFormat(dir, Event{Category: "..", Name: "x"}); err == nil {
		t.Error("ReadFormat accepted a category of ..")
	}
}

// TestEventsAsBpftrace compares the tracepoint list with bpftrace 0.17's
// -l and a few -lv field lists with its.
func TestEventsAsBpftrace(t *testing.T) {
	dir := mounted(t)
	bpftrace := testenv.RequireBpftrace(t)
	out, err := exec.Command(bpftrace, "-l", "tracepoint:*").Output()
	if err != nil {
		t.Fatalf("bpftrace -l: %v", err)
	}
	events, err := Events(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ours strings.Builder
	for _, ev := range events {
		ours.WriteString("tracepoint:" + ev.String() + "\n")
	}
	if ours.String() != string(out) {
		t.Errorf("tracepoint list differs from bpftrace -l (%d against %d bytes)", ours.Len(), len(out))
	}
	for _, name := range []string{"syscalls:sys_enter_openat", "sched:sched_switch", "block:block_rq_issue", "signal:signal_generate"} {
		want, err := exec.Command(bpftrace, "-lv", "tracepoint:"+name).Output()
		if err != nil {
			t.Fatalf("bpftrace -lv %s: %v", name, err)
		}
		cat, ev, _ := strings.Cut(name, ":")
		f, err := ReadFormat(dir, Event{Category: cat, Name: ev})
		if err != nil {
			t.Fatal(err)
		}
		got := "tracepoint:" + name + "\n"
		for _, fl := range f.Fields {
			if !fl.Common {
				got += "    " + fl.Decl() + "\n"
			}
		}
		if got != string(want) {
			t.Errorf("-lv %s:\ngot:\n%swant:\n%s", name, got, want)
		}
	}
}

// TestDataLocWholeType checks a __data_loc field declared as one type
// rather than an array (ipi_send_cpumask's cpumask), which -lv prints
// without brackets.
func TestDataLocWholeType(t *testing.T) {
	f, err := ParseFormat([]byte("format:\n\tfield:__data_loc cpumask_t cpumask;\toffset:8;\tsize:4;\tsigned:0;\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := Field{Name: "cpumask", Type: "cpumask_t", Offset: 8, Size: 4, DataLoc: true}
	if len(f.Fields) != 1 || f.Fields[0] != want {
		t.Fatalf("fields %+v, want %+v", f.Fields, want)
	}
	if got := f.Fields[0].Decl(); got != "__data_loc cpumask_t cpumask" {
		t.Errorf("Decl = %q", got)
	}
}
