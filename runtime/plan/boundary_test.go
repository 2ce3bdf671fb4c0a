package plan

import (
	"debug/elf"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/lang/attachpoint"

	"github.com/gotrace/gotrace/internal/fixture"
	"github.com/gotrace/gotrace/internal/testenv"
	"github.com/gotrace/gotrace/lang"
)

func TestInstLen(t *testing.T) {
	for _, tc := range []struct {
		name string
		code []byte
		want int // 0: an error
	}{
		{"push r15", []byte{0x41, 0x57, 0x31, 0xf6}, 2},
		{"mov ecx, 0x13", []byte{0xb9, 0x13, 0x00, 0x00, 0x00, 0x31}, 5},
		{"ret", []byte{0xc3}, 1},
		{"rep ret", []byte{0xf3, 0xc3}, 2},
		{"endbr64", []byte{0xf3, 0x0f, 0x1e, 0xfa, 0x55}, 4},
		{"rdsspq rax", []byte{0xf3, 0x48, 0x0f, 0x1e, 0xc8}, 5},
		{"nop eax", []byte{0x0f, 0x1f, 0xc0}, 3},
		{"nopw 0(rax,rax)", []byte{0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00}, 6},
		{"nopl 0(rax,rax) disp32", []byte{0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00}, 8},
		{"nopw cs:0(rax,rax) disp32", []byte{0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00}, 10},
		{"prefetcht0 rip", []byte{0x0f, 0x18, 0x0d, 1, 2, 3, 4}, 7},
		{"vmovdqa ymm0, [rsi] (VEX)", []byte{0xc5, 0xfd, 0x6f, 0x06}, 4},
		{"vmovdqu64 ymm16, [rsi] (EVEX)", []byte{0x62, 0xe1, 0xfe, 0x28, 0x6f, 0x06}, 6},
		{"truncated mov", []byte{0xb9, 0x13}, 0},
		{"truncated endbr64", []byte{0xf3, 0x0f, 0x1e}, 0},
		{"truncated nop disp32", []byte{0x0f, 0x1f, 0x84, 0x00, 0x00}, 0},
		{"rdpkru (unknown to x86asm)", []byte{0x0f, 0x01, 0xee}, 0},
		{"incsspq (a prefix x86asm returns alone)", []byte{0xf3, 0x48, 0x0f, 0xae, 0xee}, 0},
		{"empty", nil, 0},
	} {
		n, err := instLen(tc.code)
		if tc.want == 0 {
			if err == nil {
				t.Errorf("%s: length %d, want an error", tc.name, n)
			}
			continue
		}
		if err != nil || n != tc.want {
			t.Errorf("%s: length %d, %v; want %d", tc.name, n, err, tc.want)
		}
	}
}

// FuzzInstLen checks that instLen never panics and measures at most 15
// bytes, all of them in its input.
func FuzzInstLen(f *testing.F) {
	for _, s := range [][]byte{{0xf3, 0x0f, 0x1e, 0xfa}, {0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00}, {0x0f, 0x1f, 0x04}, {0x41, 0x57}} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := instLen(b)
		if err == nil && (n < 1 || n > maxInstLen || n > len(b)) {
			t.Errorf("instLen(% x) = %d", b, n)
		}
	})
}

// functionSymbol returns the function symbol called name of the ELF file
// path, from its symbol table or its dynamic one.
func functionSymbol(t *testing.T, path, name string) elf.Symbol {
	t.Helper()
	sym := symbolNamed(plainFunctions(t, path), name)
	if sym.Name == "" {
		t.Fatalf("%s has no function %s", path, name)
	}
	return sym
}

// TestCheckAddressBoundaries asks checkAddress about every byte of the
// first 64 of a function, by address and as FUNC+OFFSET: it must accept
// exactly the instruction starts objdump shows, and name the instruction
// an address falls inside.
func TestCheckAddressBoundaries(t *testing.T) {
	testenv.RequireFile(t, python3)
	for _, tc := range []struct{ path, fn string }{
		{fixture.Build(t, "bitcoind"), "main"},
		{fixture.Build(t, "bitcoind"), connectBlock},
		{python3, "Py_RunMain"},
	} {
		sym := functionSymbol(t, tc.path, tc.fn)
		target := targetOf(t, &lang.AttachPoint{Point: attachpoint.Point{Kind: lang.ProbeUprobe, Target: tc.path, Address: sym.Value}})
		end := sym.Value + min(sym.Size, 64)
		starts := fixture.InstructionStarts(t, tc.path, sym.Value, sym.Value+sym.Size)
		if len(starts) < 4 {
			t.Fatalf("objdump found %d instructions in %s", len(starts), tc.fn)
		}
		last := sym.Value
		for addr := sym.Value; addr < end; addr++ {
			if starts[addr] {
				last = addr
			}
			for _, ap := range []*lang.AttachPoint{
				{Point: attachpoint.Point{Kind: lang.ProbeUprobe, Target: tc.path, Address: addr}},
				{Point: attachpoint.Point{Kind: lang.ProbeUprobe, Target: tc.path, Func: fmt.Sprintf("%s+%d", tc.fn, addr-sym.Value)}},
			} {
				ap.Function = attachpoint.ParseFunc(ap.Func) // as lang.Resolve does
				_, e, unchecked := checkAddress(ap, target)
				switch {
				case starts[addr] && e != nil:
					t.Errorf("%s+%d: refused an instruction start: %v", tc.fn, addr-sym.Value, e.Msg)
				case !starts[addr] && e == nil:
					t.Errorf("%s+%d: accepted the inside of an instruction", tc.fn, addr-sym.Value)
				case !starts[addr] && (unchecked || !strings.Contains(e.Msg, fmt.Sprintf("inside an instruction of %s (at %#x,", tc.fn, last))):
					t.Errorf("%s+%d: %s (unchecked %v), want it inside the instruction at %#x", tc.fn, addr-sym.Value, e.Msg, unchecked, last)
				}
			}
		}
	}
}

func TestCheckAddressErrors(t *testing.T) {
	bin := fixture.Build(t, "bitcoind")
	stripped := fixture.Build(t, "bitcoind-stripped")
	main := functionSymbol(t, bin, "main")
	starts := fixture.InstructionStarts(t, bin, main.Value, main.Value+main.Size)
	second := main.Value + 1
	for !starts[second] {
		second++
	}
	for _, tc := range []struct {
		name      string
		ap        lang.AttachPoint
		want      string // "" for no problem
		unchecked bool
	}{
		{"function entry", lang.AttachPoint{Point: attachpoint.Point{Kind: lang.ProbeUprobe, Target: bin, Address: main.Value}}, "", false},
		{"decimal address", lang.AttachPoint{Point: attachpoint.Point{Kind: lang.ProbeUprobe, Target: bin, Func: strconv.FormatUint(second, 10)}}, "", false},
		{"decimal address inside", lang.AttachPoint{Point: attachpoint.Point{Kind: lang.ProbeUprobe, Target: bin, Func: strconv.FormatUint(second-1, 10)}},
			fmt.Sprintf("address %#x is inside an instruction of main (at %#x, %d bytes long): a uprobe there would corrupt it", second-1, main.Value, second-main.Value), false},
		{"offset inside", lang.AttachPoint{Point: attachpoint.Point{Kind: lang.ProbeUprobe, Target: bin, Func: "main+1"}},
			fmt.Sprintf("main+1 (address %#x) is inside an instruction of main", main.Value+1), false},
		{"hexadecimal offset", lang.AttachPoint{Point: attachpoint.Point{Kind: lang.ProbeUprobe, Target: bin, Func: fmt.Sprintf("main+%#x", second-main.Value)}}, "", false},
		{"offset past the end", lang.AttachPoint{Point: attachpoint.Point{Kind: lang.ProbeUprobe, Target: bin, Func: "main+99999"}},
			fmt.Sprintf("Offset outside the function bounds ('main' size is %d): +99999", main.Size), false},
		{"uretprobe with an offset", lang.AttachPoint{Point: attachpoint.Point{Kind: lang.ProbeUretprobe, Target: bin, Func: "main+2"}},
			"main+2: a uretprobe attaches only at a function's entry, without an offset", false},
		{"uretprobe at offset 0", lang.AttachPoint{Point: attachpoint.Point{Kind: lang.ProbeUretprobe, Target: bin, Func: "main+0"}}, "", false},
		{"uretprobe inside a function", lang.AttachPoint{Point: attachpoint.Point{Kind: lang.ProbeUretprobe, Target: bin, Address: second}},
			fmt.Sprintf("address %#x is main+%d: a uretprobe attaches only at a function's entry", second, second-main.Value), false},
		{"not code", lang.AttachPoint{Point: attachpoint.Point{Kind: lang.ProbeUprobe, Target: bin, Address: 1}},
			"address 0x1 is not in an executable segment of " + bin, false},
		{"stripped", lang.AttachPoint{Point: attachpoint.Point{Kind: lang.ProbeUprobe, Target: stripped, Address: second}},
			fmt.Sprintf("no function symbol of %s holds address %#x (a stripped file?)", stripped, second), true},
		{"stripped uretprobe", lang.AttachPoint{Point: attachpoint.Point{Kind: lang.ProbeUretprobe, Target: stripped, Address: main.Value}},
			"gotrace cannot check that it is a function's entry", true},
		{"no such file", lang.AttachPoint{Point: attachpoint.Point{Kind: lang.ProbeUprobe, Target: "/no/such/file", Address: 0x1000}},
			"uprobe target file '/no/such/file' does not exist or is not executable", false},
		{"a function", lang.AttachPoint{Point: attachpoint.Point{Kind: lang.ProbeUprobe, Target: "/no/such/file", Func: "main"}}, "", false},
		{"a usdt probe", lang.AttachPoint{Point: attachpoint.Point{Kind: lang.ProbeUSDT, Target: bin, Func: "x+1"}}, "", false},
	} {
		tc.ap.Function = attachpoint.ParseFunc(tc.ap.Func) // as lang.Resolve does
		_, e, unchecked := checkAddress(&tc.ap, targetOf(t, &tc.ap))
		switch {
		case tc.want == "" && e != nil:
			t.Errorf("%s: %v", tc.name, e.Msg)
		case tc.want != "" && e == nil:
			t.Errorf("%s: no problem, want %q", tc.name, tc.want)
		case tc.want != "" && (!strings.Contains(e.Msg, tc.want) || unchecked != tc.unchecked):
			t.Errorf("%s: %q (unchecked %v), want %q (unchecked %v)", tc.name, e.Msg, unchecked, tc.want, tc.unchecked)
		}
	}
}

// TestCheckAddressesUnsafe: what gotrace cannot check is refused with a
// hint, or with --unsafe attached after a warning at the attach point.
func TestCheckAddressesUnsafe(t *testing.T) {
	main := functionSymbol(t, fixture.Build(t, "bitcoind"), "main")
	stripped := fixture.Build(t, "bitcoind-stripped")
	src := fmt.Sprintf("BEGIN { }\nuprobe:%s:%#x { }", stripped, main.Value+2)
	p, _ := analyzedAs(t, "stdin", src)
	_, err := placeUprobes(p, hostOf(t, p, Input{}), Input{})
	if l, ok := err.(lang.ErrorList); !ok || l[0].Span.End.Line != 2 || l[0].Hint != "--unsafe attaches there anyway" {
		t.Fatalf("error %#v, want one on line 2 with the --unsafe hint", err)
	}
	var warnings strings.Builder
	if _, err := placeUprobes(p, hostOf(t, p, Input{}), Input{Unsafe: true, Warnings: &warnings}); err != nil {
		t.Fatal(err)
	}
	if want := "stdin:1-2: WARNING: no function symbol of"; !strings.HasPrefix(warnings.String(), want) {
		t.Errorf("warning %q, want a positioned WARNING", warnings.String())
	}
	warnings.Reset()
	if _, err := placeUprobes(p, hostOf(t, p, Input{}), Input{Unsafe: true}); err != nil || warnings.Len() > 0 {
		t.Errorf("--no-warnings: %v, %q", err, warnings.String())
	}
}
