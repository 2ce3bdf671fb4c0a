package codegen

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/gotrace/gotrace/internal/settings"
	"github.com/gotrace/gotrace/lang"
)

// structMem is user memory that BEGIN programs read through pointers: a
// struct S at offset 0 and the string its s member points to at 64.
var structMem [128]byte

// TestPointers reads user memory of the test process (BEGIN runs in it
// through BPF_PROG_TEST_RUN) through struct members, dereferences,
// indexing, str() and buf(), with the address passed as $1.
func TestPointers(t *testing.T) {
	binary.LittleEndian.PutUint64(structMem[0:], uint64(0xfffffffffffffff6)) // a = -10
	binary.LittleEndian.PutUint32(structMem[8:], 0xfffffffe)                 // b = -2
	binary.LittleEndian.PutUint16(structMem[12:], 0xbeef)                    // c
	addr := uint64(uintptr(unsafe.Pointer(&structMem[0])))
	binary.LittleEndian.PutUint64(structMem[16:], addr+64) // s
	copy(structMem[24:], "abcdefgh")                       // name[8]
	copy(structMem[64:], "hello world\x00")

	src := `struct S { int64_t a; int32_t b; uint16_t c; char *s; char name[8]; }
BEGIN {
  $s = (struct S *)$1;
  printf("%ld %ld %lu\n", $s->a, $s->b, $s->c);
  printf("%s|%s|%s|%s\n", str($s->s), str($s->s, 5), str($s->s, $2), $s->name);
  $p = (int32 *)$1;
  printf("%ld %ld %lu\n", *($p + 2), $p[2], *(uint8 *)($1 + 12));
  printf("%r\n", buf($s->s, 4));
  printf("%r\n", buf($s->s, $2 - 1));
  exit();
}`
	l := load(t, compileSource(t, src, fmt.Sprint(addr), "3"))
	l.runKind(t, lang.ProbeBegin)
	var got strings.Builder
	for _, r := range l.drain(t, l.spec.EventsMap) {
		got.WriteString(formatRecord(t, r))
	}
	want := `-10 -2 48879
hello world|hello|hel|abcdefgh
-2 -2 239
"hell"
"he"
`
	if got.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", got.String(), want)
	}
}

// TestLongStrings uses 200-byte strings (BPFTRACE_STRLEN=200): the
// 400-byte tuples and keys below zero and copy through helpers instead
// of unrolled stores.
func TestLongStrings(t *testing.T) {
	long := strings.Repeat("x", 190)
	src := `BEGIN {
  $a = str($1);
  $t = ($a, $a);
  $u = $t;
  @m[$a, $a] = 1;
  @m[$u.0, str($1)] += 1;
  printf("%s %d %d %d %s\n", $u.1, $a == $u.0, @m[$a, $u.1], $a == "x", str($1, 3));
  exit();
}`
	p, err := lang.Parse("t.bt", src)
	if err != nil {
		t.Fatal(err)
	}
	params := []string{long}
	info, err := lang.Analyze(p, lang.Config{Params: params, Values: settings.Values{StrLen: 200}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := Compile(info.ResolvedProgram(p), info, Options{Values: settings.Values{StrLen: 200}})
	if err != nil {
		t.Fatal(err)
	}
	if spec.Collection.Maps[ZerosMapName] == nil {
		t.Error("no zeros map: the helper path was not used")
	}
	l := load(t, spec)
	l.runKind(t, lang.ProbeBegin)
	var got strings.Builder
	for _, r := range l.drain(t, l.spec.EventsMap) {
		got.WriteString(formatRecord(t, r))
	}
	if want := long + " 1 2 0 xxx\n"; got.String() != want {
		t.Errorf("output %q, want %q", got.String(), want)
	}
}
