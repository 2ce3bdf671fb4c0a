package plan

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/internal/fixture"
	"github.com/gotrace/gotrace/internal/settings"
	"github.com/gotrace/gotrace/internal/testenv"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/usdt"
)

// python3 is a system binary whose functions the plan is tested against.
const python3 = "/usr/bin/python3.11"

// TestPlan computes the probe plan of scripts against the fixture, python3.11
// and libc without loading or attaching anything, and checks each site's
// line: where it attaches and why (what --dry-run -v prints).
func TestPlan(t *testing.T) {
	const libc = "/lib/x86_64-linux-gnu/libc.so.6"
	testenv.RequireFile(t, python3)
	testenv.RequireFile(t, libc)
	bin := fixture.Build(t, "bitcoind")
	hex := `0x[0-9a-f]+`
	for _, tc := range []struct {
		name, src string
		want      []string // a regexp per site line, in order
	}{
		{"usdt probe", fmt.Sprintf("usdt:%s:net:inbound_message { }", bin), []string{
			`^prog0 usdt:BIN:net:inbound_message: usdt net:inbound_message in BIN at HEX( \(semaphore HEX\))?, cookie \d+$`,
		}},
		{"usdt wildcard", fmt.Sprintf("usdt:%s:net:*bound_message { }", bin), []string{
			`^prog0 usdt:BIN:net:\*bound_message as usdt:BIN:net:inbound_message: usdt net:inbound_message in BIN at HEX`,
			`^prog1 usdt:BIN:net:\*bound_message as usdt:BIN:net:outbound_message: usdt net:outbound_message in BIN at HEX`,
		}},
		{"function", fmt.Sprintf("uprobe:%s:main { }", bin), []string{
			`^prog0 uprobe:BIN:main: uprobe main in BIN: symbol at HEX, file offset HEX$`,
		}},
		{"offset 0 is the function", fmt.Sprintf("uprobe:%s:main+0 { }", bin), []string{
			`^prog0 uprobe:BIN:main\+0 as uprobe:BIN:main: uprobe main in BIN: symbol at HEX, file offset HEX$`,
		}},
		{"C++ name", fmt.Sprintf("uprobe:%s:\"CChainState::ConnectBlock\" { }", bin), []string{
			`^prog0 uprobe:BIN:` + connectBlock + `: uprobe ` + connectBlock + ` in BIN: symbol at HEX`,
		}},
		{"function and offset", fmt.Sprintf("uprobe:%s:Py_RunMain+4 { }", python3), []string{
			`^prog0 uprobe:/usr/bin/python3.11:Py_RunMain\+4: uprobe Py_RunMain\+4 \(HEX\) in /usr/bin/python3.11, file offset HEX: instruction boundary checked$`,
		}},
		{"libc wildcard", fmt.Sprintf("uretprobe:%s:malloc_usable* { }", libc), []string{
			`^prog0 uretprobe:LIBC:malloc_usable_size: uretprobe malloc_usable_size in LIBC: symbol at HEX, file offset HEX$`,
		}},
		{"gotrace's own", "BEGIN { } interval:ms:100 { } END { }", []string{
			`^prog0 BEGIN: run once by gotrace$`,
			`^prog1 interval:ms:100: run by gotrace every 100ms$`,
			`^prog2 END: run once by gotrace$`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, info := analyzed(t, tc.src)
			var files usdt.Files
			defer files.Close()
			plan, err := Make(p, info, Input{Files: &files})
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			plan.Write(&out)
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if want := fmt.Sprintf("plan: %d sites", len(tc.want)); lines[0] != want {
				t.Fatalf("plan:\n%s\nwant %q first", out.String(), want)
			}
			for i, w := range tc.want {
				re := regexp.MustCompile(strings.NewReplacer("BIN", regexp.QuoteMeta(bin), "LIBC", regexp.QuoteMeta(libc), "HEX", hex).Replace(w))
				if i+1 >= len(lines) || !re.MatchString(strings.TrimSpace(lines[i+1])) {
					t.Errorf("plan:\n%s\nwant site %d to match %s", out.String(), i, re)
				}
			}
		})
	}
}

// analyzed parses and checks the script src, as the plan takes it.
func analyzed(t *testing.T, src string) (*lang.Program, *lang.Info) {
	t.Helper()
	return analyzedAs(t, "test.bt", src)
}

// analyzedAs is analyzed for a script in the file named file.
func analyzedAs(t *testing.T, file, src string) (*lang.Program, *lang.Info) {
	t.Helper()
	p, err := lang.Parse(file, src)
	if err != nil {
		t.Fatal(err)
	}
	info, err := lang.Analyze(p, lang.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return info.ResolvedProgram(p), info
}

// TestCompile compiles a script against the fixture without loading
// anything: the spec has one attachment per matched probe (net:nope, which
// does not exist, is ignored as asked).
func TestCompile(t *testing.T) {
	bin := fixture.Build(t, "bitcoind")
	p, info := analyzed(t, fmt.Sprintf(`usdt:%[1]s:net:*bound_message { @[probe] = count(); } usdt:%[1]s:net:nope { } BEGIN { }`, bin))
	files := &usdt.Files{}
	defer files.Close()
	spec, err := Compile(p, info, Input{Files: files, MissingProbes: settings.MissingIgnore})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range spec.Attachments {
		got = append(got, a.ProbeName)
	}
	slices.Sort(got)
	want := []string{"BEGIN", "usdt:" + bin + ":net:inbound_message", "usdt:" + bin + ":net:outbound_message"}
	if !slices.Equal(got, want) {
		t.Errorf("attachments %q, want %q", got, want)
	}
}
