package runtime

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gotrace/gotrace/internal/fixture"
	"github.com/gotrace/gotrace/internal/settings"
	"github.com/gotrace/gotrace/internal/testenv"
	"github.com/gotrace/gotrace/lang"
)

// TestRunUstack traces the -O0 fixture, which keeps frame pointers: a
// ustack printed while it runs names the whole call chain down to libc,
// and so does the map key's stack, printed after it exited.
func TestRunUstack(t *testing.T) {
	testenv.RequireRoot(t)
	bin := fixture.Private(t, "bitcoind-O0")
	src := fmt.Sprintf(`usdt:%s:validation:block_connected { printf("%%s|\n", ustack); @[ustack(2)] = count(); }`, bin)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, stderr, err := runScript(t, ctx, src, Options{Command: quietCommand(bin, "--rounds 1 --blocks 2 --linger-ms 500"), Quiet: true})
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	stack, maps, ok := strings.Cut(out, "|\n")
	if !ok {
		t.Fatalf("output %q has no stack", out)
	}
	var names []string
	for _, line := range strings.Split(strings.Trim(stack, "\n"), "\n") {
		name, ok := strings.CutPrefix(line, "        ")
		sym, _, _ := strings.Cut(name, "+")
		if !ok || !strings.Contains(name, "+") {
			t.Errorf("frame %q is not an indented sym+off", line)
		}
		names = append(names, sym)
	}
	want := []string{"emit_validation_block_connected", "tp_block_connected", "CChainState::ConnectBlock(CBlock const&, BlockValidationState&, CBlockIndex*, CCoinsViewCache&, CChainParams const&, bool)", "phase_blocks", "run", "main"}
	if len(names) < len(want) || strings.Join(names[:len(want)], ";") != strings.Join(want, ";") {
		t.Errorf("frames %q, want them to start with %q", names, want)
	}
	// The fixture has exited when the maps are printed: the stack is
	// named with the mappings kept from when it ran.
	if !strings.Contains(maps, "@[\n    emit_validation_block_connected+") || !strings.Contains(maps, "\n]: 2\n") {
		t.Errorf("maps %q: want one named stack counted twice", maps)
	}
}

// exitMapsStart is where the maps printed at exit start, after the two
// newlines bpftrace prints before them, in text and in JSON.
var exitMapsStart = regexp.MustCompile(`\n\n\n(@|\{"type": "map")`)

// cutExitMaps splits a trace's output into what it printed while running
// and the maps printed at exit.
func cutExitMaps(out string) (string, string) {
	if loc := exitMapsStart.FindStringIndex(out); loc != nil {
		return out[:loc[0]], out[loc[0]:]
	}
	return out, ""
}

// TestRunUstackMatchesBpftrace runs ustack in printf, print, map keys and
// values under gotrace and bpftrace, as text and as JSON: the outputs
// must be the same once addresses (ASLR) and the fixture's path are
// masked.
func TestRunUstackMatchesBpftrace(t *testing.T) {
	bpftrace := testenv.RequireBpftrace(t)
	bin := fixture.Private(t, "bitcoind-O0")
	src := fmt.Sprintf(`usdt:%s:validation:block_connected {
  printf("%%s|\n", ustack);
  printf("%%s|\n", ustack(perf, 3));
  print(ustack(1));
  @[ustack] = count();
  @p[ustack(perf, 2), 7] = count();
  @v = ustack(3);
}`, bin)
	args := "--rounds 1 --blocks 2 --linger-ms 1000 --output /dev/null"
	mask := regexp.MustCompile(`[0-9a-f]{12}|` + regexp.QuoteMeta(bin))
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			out, stderr, err := runScript(t, ctx, src, Options{Command: bin + " " + args, Format: format})
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			ref, err := exec.CommandContext(ctx, bpftrace, "-f", format, "-e", src, "-c", bin+" "+args).Output()
			if err != nil {
				t.Fatalf("bpftrace: %v", err)
			}
			// The maps are printed after the fixture exited: bpftrace
			// prints their stacks as addresses, gotrace names them with
			// the mappings it kept, as it named them while it ran.
			got, gotMaps := cutExitMaps(mask.ReplaceAllString(out, "X"))
			want, wantMaps := cutExitMaps(mask.ReplaceAllString(string(ref), "X"))
			if got != want {
				t.Errorf("gotrace printed\n%s\nbpftrace printed\n%s", got, want)
			}
			if !strings.Contains(got, "tp_block_connected+") {
				t.Errorf("no named frame in\n%s", got)
			}
			if named := regexp.MustCompile(`0xX\b`).ReplaceAllLiteralString(wantMaps, ""); strings.Contains(gotMaps, "0xX") || !strings.Contains(gotMaps, "tp_block_connected+") || named == wantMaps {
				t.Errorf("exit maps: gotrace printed\n%s\nwant names where bpftrace printed addresses\n%s", gotMaps, wantMaps)
			}
		})
	}
}

// TestRunKstack samples kernel stacks with profile, as bpftrace's
// tutorial does, while this process makes system calls, and checks the
// keys have bpftrace's shape: a frame a line, "sym+off", indented four
// spaces, or in perf mode a tab, the address and "sym+off".
func TestRunKstack(t *testing.T) {
	testenv.RequireRoot(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			_, _ = os.ReadFile("/proc/self/status")
		}
	}()
	out, stderr, err := runScript(t, context.Background(), `profile:hz:499 { @[kstack(3)] = count(); @p[kstack(perf, 2)] = count(); } interval:ms:500 { exit(); }`, Options{Quiet: true})
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	frame := `[\w.$]+\+\d+`
	for _, re := range []string{
		`(?m)^@\[\n(    ` + frame + `\n){1,3}\]: \d+$`,
		`(?m)^@p\[\n(\tffffffff[0-9a-f]{8} ` + frame + `\n){1,2}\]: \d+$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("no key matches %s in:\n%s", re, out)
		}
	}
}

// buildCxxChain builds testdata/cxxchain.cc, a call chain eight deep under
// main with a USDT probe at the bottom, with g++ -O2 and flags into a
// temporary directory.
func buildCxxChain(t *testing.T, flags ...string) string {
	t.Helper()
	gxx := testenv.RequireTool(t, "g++")
	if err := fixture.Check(); err != nil {
		testenv.Unavailable(t, "%v", err)
	}
	bin := filepath.Join(t.TempDir(), "cxxchain")
	args := append([]string{"-O2", "-o", bin}, flags...)
	args = append(args, filepath.Join("testdata", "cxxchain.cc"))
	if out, err := exec.Command(gxx, args...).CombinedOutput(); err != nil {
		t.Fatalf("build cxxchain: %v\n%s", err, out)
	}
	return bin
}

// cxxChainFrames are the functions of cxxchain's stack at its probe, as
// bpftrace 0.17 names them (libstdc++'s demangling, with the clones -O2
// makes) and as a frame-pointer walk finds them: reach is missing, since
// bottom, a leaf, sets no frame of its own, so the walk goes from bottom's
// address to the return address in descend.
var cxxChainFrames = []string{
	"chain::detail::bottom(int)",
	"chain::detail::descend(int)",
	"chain::Walker<int>::step(int) [clone .isra.0]",
	"chain::Walker<int>::walk(int) [clone .isra.0]",
	"chain::stage::Decoder::check(int) const [clone .isra.0]",
	"chain::stage::Decoder::decode(chain::stage::Decoder const&, int) [clone .isra.0]",
	"chain::Pipeline::run(int) [clone .isra.0]",
	"main",
}

// stackFunctions returns the function of each "sym+off" frame of a stack's
// text, indented by indent.
func stackFunctions(t *testing.T, text, indent string) []string {
	t.Helper()
	var names []string
	for _, line := range strings.Split(strings.Trim(text, "\n"), "\n") {
		frame, ok := strings.CutPrefix(line, indent)
		i := strings.LastIndex(frame, "+")
		if !ok || i < 0 {
			t.Errorf("frame %q is not %q then sym+off", line, indent)
			continue
		}
		names = append(names, frame[:i])
	}
	return names
}

// TestRunCxxStackAfterExit traces cxxchain (C++ at -O2) under -c and
// prints usym and ustack while it runs and again in the maps printed after
// it exited, live and in a replay of a -w capture: the names must be the
// same, demangled as bpftrace prints them.
func TestRunCxxStackAfterExit(t *testing.T) {
	testenv.RequireRoot(t)
	for _, tt := range []struct {
		name    string
		flags   []string
		capture bool
		// frames are how many of cxxChainFrames the kernel's
		// frame-pointer walk reaches.
		frames int
	}{
		{"frame pointers", []string{"-fno-omit-frame-pointer"}, false, len(cxxChainFrames)},
		{"frame pointers replayed", []string{"-fno-omit-frame-pointer"}, true, len(cxxChainFrames)},
		// Without frame pointers the walk has the probe's own address
		// right and the rest is whatever rbp held.
		{"no frame pointers", []string{"-fomit-frame-pointer"}, false, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bin := buildCxxChain(t, tt.flags...)
			out, stderr := traceCxxChain(t, bin, tt.capture)
			checkCxxStacks(t, out, tt.frames)
			if strings.Contains(stderr, "WARNING") {
				t.Errorf("stderr warns:\n%s", stderr)
			}
		})
	}
}

// cxxChainScript is the script of TestRunCxxStackAfterExit for cxxchain
// at bin: usym and ustack printed at its probe and kept in maps.
func cxxChainScript(bin string) string {
	return fmt.Sprintf(`usdt:%s:cxxchain:bottom { printf("%%s|%%s|\n", usym(reg("ip")), ustack); @[ustack] = count(); @s = usym(reg("ip")); }`, bin)
}

// cxxChainFIFO makes the FIFO cxxchain waits on and returns it with the
// function that lets the program exit (also called when t ends).
func cxxChainFIFO(t *testing.T) (string, func()) {
	t.Helper()
	fifo := filepath.Join(t.TempDir(), "exit")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	release := func() {
		// The program holds the FIFO open from before its probe fires and
		// exits on the byte. Without a reader (it exited already) the
		// open fails, which is as good.
		if fd, err := unix.Open(fifo, unix.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
			_, _ = unix.Write(fd, []byte{1})
			unix.Close(fd)
		}
	}
	t.Cleanup(release)
	return fifo, release
}

// traceCxxChain runs a script printing usym and ustack at cxxchain's probe
// and keeping them in maps, with -c bin, and returns what it printed (with
// capture, what the replay of its -w capture printed) and its standard
// error. The program waits on a FIFO until its probe's record has been
// handled (its line is out, or with capture, its input record is
// written), so the test decides when it exits.
func traceCxxChain(t *testing.T, bin string, capture bool) (string, string) {
	t.Helper()
	fifo, release := cxxChainFIFO(t)
	src := cxxChainScript(bin)
	command := bin + " " + fifo
	p, info := checkScript(t, src, lang.Config{Child: true, Host: NewHost(0, command)})
	opts := Options{Command: command, Quiet: true}
	out, errOut, captured := newSyncBuffer("\n|\n"), newSyncBuffer(""), newSyncBuffer(cxxChainFrames[0])
	opts.Out, opts.Err = out, errOut
	handled := out.watch
	if capture {
		opts.Capture, handled = captured, captured.watch
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, p, info, opts) }()
	select {
	case <-handled:
	case err := <-done:
		t.Fatalf("Run ended before the probe's record was handled: %v\n%s%s", err, out, errOut)
	case <-time.After(60 * time.Second):
		t.Fatalf("the probe's record was not handled in 60 s:\n%s%s", out, errOut)
	}
	release()
	awaitRunEnd(t, done, out, errOut)
	checkNoBPFFiles(t)
	if !capture {
		return out.String(), errOut.String()
	}
	replay, err := replayed([]byte(captured.String()), "text")
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	return replay, errOut.String()
}

// firstFrames returns the first n frames of a stack's text: without frame
// pointers the frames after those the walk gets right are whatever rbp
// pointed to, named or not.
func firstFrames(text string, n int) string {
	lines := strings.Split(strings.Trim(text, "\n"), "\n")
	return strings.Join(lines[:min(n, len(lines))], "\n")
}

// checkCxxStacks checks the output of TestRunCxxStackAfterExit's script:
// the live usym and ustack, then the maps printed after the program
// exited, name the first frames of cxxChainFrames the same way.
func checkCxxStacks(t *testing.T, out string, frames int) {
	t.Helper()
	sym, rest, _ := strings.Cut(out, "|")
	live, maps, ok := strings.Cut(rest, "\n|\n")
	if !ok {
		t.Fatalf("output %q has no stack", out)
	}
	if sym != cxxChainFrames[0] {
		t.Errorf("usym while running is %q, want %q", sym, cxxChainFrames[0])
	}
	want := strings.Join(cxxChainFrames[:frames], "\n")
	if got := stackFunctions(t, firstFrames(live, frames), "        "); len(got) < frames || strings.Join(got[:frames], "\n") != want {
		t.Errorf("ustack while running names\n%s\nwant it to start with\n%s", strings.Join(got, "\n"), want)
	}
	key, value, ok := strings.Cut(strings.TrimPrefix(maps, "\n\n@[\n"), "]: 1\n")
	if !ok {
		t.Fatalf("maps %q: want one stack counted once", maps)
	}
	if got := stackFunctions(t, firstFrames(key, frames), "    "); len(got) < frames || strings.Join(got[:frames], "\n") != want {
		t.Errorf("ustack after exit names\n%s\nwant it to start with\n%s", strings.Join(got, "\n"), want)
	}
	if want := "@s: " + cxxChainFrames[0] + "\n"; value != want {
		t.Errorf("usym after exit: %q, want %q", value, want)
	}
}

// TestNamesUserAddresses checks which scripts make a trace keep the
// mappings of the processes it sees: those whose records or maps hold a
// user stack or symbol, anywhere in a key, a tuple or a value.
func TestNamesUserAddresses(t *testing.T) {
	for _, tt := range []struct {
		src  string
		want bool
	}{
		{`BEGIN { @ = count(); printf("%d\n", pid); }`, false},
		{`BEGIN { @[kstack] = count(); }`, false},
		{`BEGIN { printf("%s\n", ustack); }`, true},
		{`BEGIN { @[ustack(perf, 3)] = count(); }`, true},
		{`BEGIN { @[1, usym(0)] = count(); }`, true},
		{`BEGIN { @v = (1, usym(0)); }`, true},
	} {
		p, info := compileScript(t, tt.src)
		spec, err := Compile(p, info, Options{})
		if err != nil {
			t.Fatalf("%s: %v", tt.src, err)
		}
		if got := namesUserAddresses(spec); got != tt.want {
			t.Errorf("%s: namesUserAddresses = %v, want %v", tt.src, got, tt.want)
		}
	}
}

// TestRunCxxStackMatchesBpftrace runs TestRunCxxStackAfterExit's script on
// cxxchain with frame pointers under bpftrace 0.17: what it prints while
// the program runs (usym, and ustack with C++ names and clone suffixes)
// must be what gotrace prints, and its exit maps are the addresses gotrace
// names (docs/compat.md).
func TestRunCxxStackMatchesBpftrace(t *testing.T) {
	bpftrace := testenv.RequireBpftrace(t)
	bin := buildCxxChain(t, "-fno-omit-frame-pointer")
	got, _ := traceCxxChain(t, bin, false)

	fifo, release := cxxChainFIFO(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bpftrace, "-e", cxxChainScript(bin), "-c", bin+" "+fifo)
	out, errOut := newSyncBuffer("\n|\n"), newSyncBuffer("")
	cmd.Stdout, cmd.Stderr = out, errOut
	if err := cmd.Start(); err != nil {
		t.Fatalf("start bpftrace: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-out.watch:
	case err := <-done:
		t.Fatalf("bpftrace ended before the probe's line: %v\n%s%s", err, out, errOut)
	case <-time.After(60 * time.Second):
		t.Fatalf("no probe line from bpftrace in 60 s:\n%s%s", out, errOut)
	}
	release()
	if err := <-done; err != nil {
		t.Fatalf("bpftrace: %v\n%s", err, errOut)
	}
	want := strings.TrimPrefix(out.String(), "Attaching 1 probe...\n")
	gotLive, gotMaps := cutExitMaps(got)
	wantLive, wantMaps := cutExitMaps(want)
	if gotLive != wantLive {
		t.Errorf("while running, gotrace printed\n%s\nbpftrace printed\n%s", gotLive, wantLive)
	}
	if !strings.Contains(wantMaps, "@[\n    0x") || strings.Contains(gotMaps, "0x") {
		t.Errorf("exit maps: gotrace printed\n%s\nwant names where bpftrace printed addresses\n%s", gotMaps, wantMaps)
	}
}

// TestRunKeepMangled prints C++ names as the file holds them under
// BPFTRACE_NO_CPP_DEMANGLE=1 (settings.Values.NoCppDemangle), in usym(),
// func and ustack, and demangled otherwise.
func TestRunKeepMangled(t *testing.T) {
	testenv.RequireRoot(t)
	gxx := testenv.RequireTool(t, "g++")
	dir := t.TempDir()
	src := filepath.Join(dir, "hit.cc")
	if err := os.WriteFile(src, []byte(`namespace ns { __attribute__((noinline)) int hit(int x) { __asm__ volatile("" : : "r"(x)); return x; } }
int main() { return ns::hit(3) - 3; }
`), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "hit")
	if out, err := exec.Command(gxx, "-O1", "-fno-omit-frame-pointer", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("g++: %v\n%s", err, out)
	}
	script := `uprobe:` + bin + `:_ZN2ns3hitEi { printf("%s|%s|%s", usym(reg("ip")), func, ustack(1)); }`
	for _, tt := range []struct {
		keep bool
		want string
	}{
		{false, "ns::hit(int)|ns::hit(int)|\n        ns::hit(int)+0\n"},
		{true, "_ZN2ns3hitEi|_ZN2ns3hitEi|\n        _ZN2ns3hitEi+0\n"},
	} {
		out := traceCommand(t, bin, script, Options{Values: settings.Values{NoCppDemangle: tt.keep}})
		if !strings.HasPrefix(out, tt.want) {
			t.Errorf("NoCppDemangle %v: output\n%q\nwant it to start with\n%q", tt.keep, out, tt.want)
		}
	}
}
