package codegen

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"unsafe"

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
