package codegen

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/gotrace/gotrace/codegen/layout"
	"github.com/gotrace/gotrace/internal/testenv"
	"github.com/gotrace/gotrace/lang"
)

// loaded is a compiled program loaded into the kernel.
type loaded struct {
	spec *Spec
	coll *ebpf.Collection
}

// load loads spec into the kernel, failing the test with the verifier's
// log when it is refused.
func load(t *testing.T, spec *Spec) *loaded {
	t.Helper()
	testenv.RequireRoot(t)
	coll, err := ebpf.NewCollection(spec.Collection)
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			t.Fatalf("load: %v\n%-60v", err, ve)
		}
		if errors.Is(err, os.ErrPermission) {
			testenv.Unavailable(t, "loading eBPF: %v", err)
		}
		t.Fatalf("load: %v", err)
	}
	t.Cleanup(coll.Close)
	return &loaded{spec: spec, coll: coll}
}

// runKind runs the programs attached as kind (BEGIN, END, interval) in
// order with BPF_PROG_TEST_RUN.
func (l *loaded) runKind(t *testing.T, kind lang.ProbeKind) {
	t.Helper()
	for _, a := range l.spec.Attachments {
		if a.Kind != kind {
			continue
		}
		if _, err := l.coll.Programs[a.Program].Run(&ebpf.RunOptions{Context: []uint64{0}}); err != nil {
			t.Fatalf("run %s: %v", a.Program, err)
		}
	}
}

// record is a decoded ring-buffer record.
type record struct {
	ev   Event
	data []byte
}

// drain reads every record waiting in the ring buffer map name.
func (l *loaded) drain(t *testing.T, name string) []record {
	t.Helper()
	rd, err := ringbuf.NewReader(l.coll.Maps[name])
	if err != nil {
		t.Fatalf("ringbuf reader: %v", err)
	}
	defer rd.Close()
	var out []record
	for {
		rd.SetDeadline(time.Now().Add(10 * time.Millisecond))
		rec, err := rd.Read()
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return out
			}
			t.Fatalf("ringbuf read: %v", err)
		}
		id := binary.LittleEndian.Uint64(rec.RawSample)
		if id >= uint64(len(l.spec.Events)) {
			t.Fatalf("record with unknown event id %d", id)
		}
		out = append(out, record{ev: l.spec.Events[id], data: rec.RawSample[8:]})
	}
}

// text renders a record's fields, space separated: integers in decimal
// (signed types as signed), strings up to their NUL, bufs in %q.
func (r record) text() string {
	parts := make([]string, 0, len(r.ev.Args))
	var c layout.Cursor
	for _, f := range r.ev.Args {
		parts = append(parts, fieldText(f, c.Field(f, r.data)))
	}
	return strings.Join(parts, " ")
}

func fieldText(f layout.Field, b []byte) string {
	switch f.Kind {
	case layout.String:
		s := b[:min(len(b), f.Size)]
		if i := strings.IndexByte(string(s), 0); i >= 0 {
			s = s[:i]
		}
		return string(s)
	case layout.Buf:
		n := binary.LittleEndian.Uint64(b)
		return fmt.Sprintf("%q", b[8:8+n])
	case layout.Tuple:
		parts := make([]string, len(f.Elems))
		for i, ef := range f.Elems {
			parts[i] = fieldText(ef, b[ef.Offset:])
		}
		return "(" + strings.Join(parts, ",") + ")"
	}
	v := binary.LittleEndian.Uint64(b)
	if f.Kind == layout.Int && f.Signed {
		return fmt.Sprint(int64(v))
	}
	return fmt.Sprint(v)
}

// printfs runs BEGIN and returns the text of every printf record.
func printfs(t *testing.T, l *loaded) []string {
	t.Helper()
	l.runKind(t, lang.ProbeBegin)
	var out []string
	for _, r := range l.drain(t, l.spec.EventsMap) {
		if r.ev.Kind == EventPrintf {
			out = append(out, r.text())
		}
	}
	return out
}

// compileSource parses, checks and compiles a script with no USDT probes.
func compileSource(t *testing.T, src string, params ...string) *Spec {
	t.Helper()
	return compileConfig(t, src, lang.Config{Params: params})
}

// compileConfig parses, checks with cfg and compiles a script with no
// USDT probes, failing the test at the first step that fails.
func compileConfig(t *testing.T, src string, cfg lang.Config) *Spec {
	t.Helper()
	p, err := lang.Parse("test.bt", src)
	if err != nil {
		t.Fatalf("parse %s: %v", src, err)
	}
	info, err := lang.Analyze(p, cfg, nil)
	if err != nil {
		t.Fatalf("check %s: %v", src, err)
	}
	spec, err := Compile(info.ResolvedProgram(p), info, Options{})
	if err != nil {
		t.Fatalf("compile %s: %v", src, err)
	}
	return spec
}
