package unwind

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/internal/fixture"
	"github.com/gotrace/gotrace/internal/regtest"
	"github.com/gotrace/gotrace/internal/testenv"
)

// readelfRow is one row of readelf --debug-dump=frames-interp: the
// address it starts at and each column's text by column name ("CFA",
// "ra", "rbp", "x29", ...).
type readelfRow struct {
	addr uint64
	cols map[string]string
}

// readelfFDE is one FDE as readelf interprets it: its range and rows. An
// FDE whose program never moves the location and changes nothing prints no
// rows; its CIE's initial row then applies from begin.
type readelfFDE struct {
	begin, end uint64
	cie        string
	rows       []readelfRow
}

// readelfCIE is a CIE as readelf prints it: its return address column
// and its initial row.
type readelfCIE struct {
	ra      string
	initial readelfRow
}

// parseReadelfFrames parses readelf --debug-dump=frames-interp's text:
// entries start with their section offset, then CIE or FDE; each is
// followed by a header line naming its columns (LOC, CFA, registers, ra)
// and its rows. It returns the FDEs and the CIEs by section offset.
func parseReadelfFrames(t *testing.T, text []byte) ([]readelfFDE, map[string]*readelfCIE) {
	t.Helper()
	var (
		fdes    []readelfFDE
		cies    = map[string]*readelfCIE{}
		header  []string
		cieAt   string // the CIE being read, if any
		inFDE   bool
		lineNum int
	)
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lineNum++
		f := readelfFields(sc.Text())
		switch {
		case len(f) == 0:
			header = nil
		case len(f) >= 4 && f[3] == "CIE":
			cieAt, inFDE = f[0], false
			cie := &readelfCIE{}
			for _, w := range f[4:] {
				if ra, ok := strings.CutPrefix(w, "ra="); ok {
					cie.ra = ra
				}
			}
			cies[cieAt] = cie
		case len(f) >= 6 && f[3] == "FDE":
			cie, ok1 := strings.CutPrefix(f[4], "cie=")
			pc, ok2 := strings.CutPrefix(f[5], "pc=")
			lo, hi, ok3 := strings.Cut(pc, "..")
			begin, err1 := strconv.ParseUint(lo, 16, 64)
			end, err2 := strconv.ParseUint(hi, 16, 64)
			if !ok1 || !ok2 || !ok3 || err1 != nil || err2 != nil {
				t.Fatalf("readelf line %d: FDE header %q", lineNum, sc.Text())
			}
			fdes = append(fdes, readelfFDE{begin: begin, end: end, cie: cie})
			cieAt, inFDE = "", true
		case f[0] == "LOC":
			header = f
		case header != nil:
			addr, err := strconv.ParseUint(f[0], 16, 64)
			if err != nil || len(f) != len(header) {
				t.Fatalf("readelf line %d: row %q does not match header %q", lineNum, sc.Text(), header)
			}
			row := readelfRow{addr: addr, cols: map[string]string{}}
			for i, name := range header[1:] {
				row.cols[name] = f[i+1]
			}
			switch {
			case inFDE:
				fde := &fdes[len(fdes)-1]
				fde.rows = append(fde.rows, row)
			case cieAt != "":
				cies[cieAt].initial = row
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read readelf's output: %v", err)
	}
	return fdes, cies
}

// readelfFields splits a line of readelf's into fields; a register rule
// reads "r9 (r9)", one field though it has a space.
func readelfFields(line string) []string {
	var f []string
	for _, w := range strings.Fields(line) {
		if strings.HasPrefix(w, "(") && len(f) > 0 {
			f[len(f)-1] += " " + w
			continue
		}
		f = append(f, w)
	}
	return f
}

// readelfColumns are the column names readelf gives the registers the
// table tracks, and the return address column's DWARF number.
type readelfColumns struct{ sp, fp, ra, raColumn string }

// readelfNames are each machine's readelfColumns.
var readelfNames = map[elf.Machine]readelfColumns{
	elf.EM_X86_64:  {sp: "rsp", fp: "rbp", ra: "ra", raColumn: "16"},
	elf.EM_AARCH64: {sp: "sp", fp: "x29", ra: "ra", raColumn: "30"},
}

// expectedRule is the rule a readelf row asks for, translated on its own
// from readelf's notation: "u" undefined, "s" same value, "c-16" saved at
// CFA-16, "exp"/"vexp"/"rN"/"v+N" what the table cannot describe. inPLT
// says the row is in .plt, where readelf's "exp" CFA is the PLT expression.
//
// readelf prints "u" both for a register the program made undefined and
// for one it has not mentioned yet. On x86-64 the CIE always sets the
// return address, so "u" there is undefined; an arm64 CIE leaves x30
// alone (it holds the return address until saved), so there "u" may be
// either: orUndefined says that the undefined rule is right too.
func expectedRule(m elf.Machine, row readelfRow, inPLT bool) (want Rule, orUndefined bool, err error) {
	names := readelfNames[m]
	ra := row.cols[names.ra]
	switch {
	case ra == "u" && m == elf.EM_AARCH64:
		orUndefined = true
	case ra == "u":
		return Rule{CFAReg: RegUndefined}, false, nil
	}
	want, err = expectedRegisterRule(names, m, row, inPLT)
	return want, orUndefined, err
}

// expectedRegisterRule is expectedRule for a row whose return address
// is not undefined.
func expectedRegisterRule(names readelfColumns, m elf.Machine, row readelfRow, inPLT bool) (Rule, error) {
	var r Rule
	cfa := row.cols["CFA"]
	switch {
	case cfa == "exp" && inPLT && m == elf.EM_X86_64:
		r.CFAReg = RegPLT
	case strings.HasPrefix(cfa, names.sp+"+"), strings.HasPrefix(cfa, names.sp+"-"):
		r.CFAReg = RegSP
	case strings.HasPrefix(cfa, names.fp+"+"), strings.HasPrefix(cfa, names.fp+"-"):
		r.CFAReg = RegFP
	default:
		return unsupported, nil
	}
	if r.CFAReg != RegPLT {
		_, off, _ := strings.Cut(cfa, "+")
		if off == "" {
			off = cfa[strings.IndexByte(cfa, '-'):]
		}
		v, err := strconv.ParseInt(off, 10, 32)
		if err != nil {
			return Rule{}, fmt.Errorf("CFA %q: %w", cfa, err)
		}
		r.CFAOffset = int32(v)
	}
	saved := func(col string) (int32, bool, error) {
		switch s, ok := row.cols[col]; {
		case !ok, s == "s", s == "u":
			return 0, true, nil
		case strings.HasPrefix(s, "c"):
			v, err := strconv.ParseInt(s[1:], 10, 32)
			return int32(v), true, err
		default:
			return 0, false, nil
		}
	}
	fp, ok, err := saved(names.fp)
	if err != nil || !ok {
		return unsupported, err
	}
	r.FPOffset = fp
	raOff, ok, err := saved(names.ra)
	switch {
	case err != nil:
		return Rule{}, err
	case !ok:
		return unsupported, nil
	case m == elf.EM_AARCH64:
		r.RAOffset = raOff
	case raOff != -8:
		return unsupported, nil
	}
	return r, nil
}

// compareWithReadelf checks every row readelf prints for the file at path
// against the table Build makes of it: Lookup at the row's address must
// give the rule readelf's row asks for. It returns the table and how many
// rows it compared.
func compareWithReadelf(t *testing.T, path string) (*Table, int) {
	t.Helper()
	readelf := testenv.RequireTool(t, "readelf")
	out, err := exec.Command(readelf, "--debug-dump=no-follow-links", "--debug-dump=frames-interp", path).Output()
	if err != nil {
		t.Fatalf("readelf --debug-dump=frames-interp %s: %v", path, err)
	}
	fdes, cies := parseReadelfFrames(t, out)
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	table, err := Build(f)
	if err != nil {
		t.Fatalf("Build(%s): %v", path, err)
	}
	var pltLo, pltHi uint64
	if s := f.Section(".plt"); s != nil {
		pltLo, pltHi = s.Addr, s.Addr+s.Size
	}
	compared, mismatches := 0, 0
	check := func(fde readelfFDE, row readelfRow, at uint64) {
		want, orUndefined, err := expectedRule(f.Machine, row, pltLo <= at && at < pltHi)
		if err != nil {
			t.Fatalf("%s: FDE %#x..%#x row %#x: %v", path, fde.begin, fde.end, at, err)
		}
		if cie := cies[fde.cie]; cie == nil || cie.ra != readelfNames[f.Machine].raColumn {
			// A CIE naming another return address column (arm64 glibc's
			// hand-written string functions say 15): not the ABI's.
			want, orUndefined = unsupported, false
		}
		got, _ := table.Lookup(at)
		compared++
		if got != want && !(orUndefined && got.CFAReg == RegUndefined) {
			if mismatches++; mismatches <= 10 {
				t.Errorf("%s: at %#x (FDE %#x..%#x) Lookup = %+v, readelf's row %v asks for %+v",
					path, at, fde.begin, fde.end, got, row.cols, want)
			}
		}
	}
	for _, fde := range fdes {
		if fde.end <= fde.begin {
			continue
		}
		if len(fde.rows) == 0 {
			if cie, ok := cies[fde.cie]; ok && cie.initial.cols != nil {
				check(fde, cie.initial, fde.begin)
			}
			continue
		}
		for i, row := range fde.rows {
			if row.addr >= fde.end || (i+1 < len(fde.rows) && fde.rows[i+1].addr == row.addr) {
				continue // past the FDE, or replaced by the next row at the same address
			}
			check(fde, row, row.addr)
		}
	}
	if mismatches > 0 {
		t.Errorf("%s: %d of %d rows differ from readelf's", path, mismatches, compared)
	}
	if compared == 0 {
		t.Fatalf("%s: readelf printed no rows", path)
	}
	return table, compared
}

// TestBuildMatchesReadelf compares the tables of real files with readelf's
// interpretation of their CFI: on x86-64, bitcoind, libc, libstdc++ (none
// with frame pointers) and the cxxchain fixture at -O2
// -fomit-frame-pointer; on arm64, libc and the C fixture.
func TestBuildMatchesReadelf(t *testing.T) {
	files := []struct {
		name string
		path func(t *testing.T) string
	}{
		{"bitcoind", func(t *testing.T) string { return bitcoind(t) }},
		{"libc", systemFile(libc)},
		{"libstdc++", systemFile(libstdcxx)},
		{"cxxchain", func(t *testing.T) string {
			return buildCxxChain(t, "g++", "-fomit-frame-pointer")
		}},
		// arm64: Debian's cross libc (hack/setup.sh installs it with
		// gcc-aarch64-linux-gnu) and the C fixture cross-built at -O2.
		{"arm64 libc", systemFile(arm64Libc)},
		{"arm64 fixture", func(t *testing.T) string {
			return fixture.BuildARM64(t, "bitcoind")
		}},
		// Go writes no .eh_frame, only a compressed .debug_frame.
		{"go debug_frame", buildGoProgram},
	}
	for _, tc := range files {
		t.Run(tc.name, func(t *testing.T) {
			table, n := compareWithReadelf(t, tc.path(t))
			t.Logf("%d rows compared; table: %d rows, %d rules", n, len(table.Rows), len(table.Rules))
		})
	}
}

// The Debian 12 libraries bitcoind maps, whose tables the tests check.
const (
	libc      = "/lib/x86_64-linux-gnu/libc.so.6"
	libstdcxx = "/lib/x86_64-linux-gnu/libstdc++.so.6"
	arm64Libc = "/usr/aarch64-linux-gnu/lib/libc.so.6"
)

// bitcoind returns the path of the shared Bitcoin Core's bitcoind (a
// Release build: no frame pointers), or stops t when it is missing.
func bitcoind(t testing.TB) string {
	t.Helper()
	dir, err := regtest.Dir()
	if err != nil {
		testenv.Unavailable(t, "Bitcoin Core: %v", err)
	}
	p := filepath.Join(dir, "bin", "bitcoind")
	testenv.RequireFile(t, p)
	return p
}

// systemFile returns a test helper giving path, or stopping the test when
// the file is missing.
func systemFile(path string) func(t *testing.T) string {
	return func(t *testing.T) string {
		testenv.RequireFile(t, path)
		return path
	}
}

// buildCxxChain compiles runtime/testdata/cxxchain.cc at -O2 with compiler
// and flags into a temporary directory and returns the binary.
func buildCxxChain(t *testing.T, compiler string, flags ...string) string {
	t.Helper()
	cxx := testenv.RequireTool(t, compiler)
	bin := filepath.Join(t.TempDir(), "cxxchain")
	args := append([]string{"-O2", "-o", bin}, flags...)
	args = append(args, filepath.Join("..", "testdata", "cxxchain.cc"))
	if out, err := exec.Command(cxx, args...).CombinedOutput(); err != nil {
		t.Fatalf("build cxxchain with %s: %v\n%s", compiler, err, out)
	}
	return bin
}

// buildGoProgram builds a small Go program with its DWARF (go test's own
// binary has none) into a temporary directory and returns its path.
func buildGoProgram(t *testing.T) string {
	t.Helper()
	goTool := testenv.RequireTool(t, "go")
	dir := t.TempDir()
	for name, text := range map[string]string{
		"go.mod":  "module hello\n",
		"main.go": "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello\") }\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "hello")
	cmd := exec.Command(goTool, "build", "-o", bin, ".")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build hello: %v\n%s", err, out)
	}
	return bin
}
