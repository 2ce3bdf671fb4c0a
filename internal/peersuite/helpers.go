package peersuite

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// helperRef matches a helper a test names: ./testprogs/NAME or
// ./testlibs/libNAME.so, relative to the working directory.
// A name followed by '*' is a wildcard over the helpers, not one of them.
var helperRef = regexp.MustCompile(`\btest(progs|libs)/([\w.+-]+)(\*?)`)

// progFlags are the flags bpftrace's CMake files compile every helper
// program with (tests/testprogs/CMakeLists.txt).
var progFlags = []string{"-g", "-O0", "-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer"}

// noFramePointerFlags replace progFlags for uprobe_nofp, which is built
// without frame pointers so that DWARF unwinding has something to do.
var noFramePointerFlags = []string{"-g", "-O1", "-fomit-frame-pointer", "-fno-optimize-sibling-calls"}

// Helpers builds bpftrace's helper programs (tests/testprogs) and libraries
// (tests/testlibs) on demand into a scratch working directory, each at most
// once per run, as bpftrace's CMake files build them. The directory also
// links runtime/ to the tests, so that the tests' relative paths
// (./testprogs/NAME, runtime/scripts/...) resolve in it.
type Helpers struct {
	// Src is the directory holding testprogs/, testlibs/ and include/.
	Src string
	// Dir is the scratch working directory the helpers are built into.
	Dir string

	mu     sync.Mutex
	builds map[string]*helperBuild
}

// helperBuild is one helper's build, done once.
type helperBuild struct {
	once sync.Once
	err  error
}

// NewHelpers prepares dir as the working directory for the tests in
// testsDir (bpftrace's tests/runtime, next to testprogs/ and testlibs/).
func NewHelpers(testsDir, dir string) (*Helpers, error) {
	testsDir, err := filepath.Abs(testsDir)
	if err != nil {
		return nil, fmt.Errorf("resolve tests directory: %w", err)
	}
	if err := os.Symlink(testsDir, filepath.Join(dir, "runtime")); err != nil {
		return nil, fmt.Errorf("link runtime tests: %w", err)
	}
	for _, sub := range []string{"testprogs", "testlibs"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, fmt.Errorf("create helper directory: %w", err)
		}
	}
	return &Helpers{Src: filepath.Dir(testsDir), Dir: dir, builds: map[string]*helperBuild{}}, nil
}

// helperRefs returns the helpers (testprogs/NAME, testlibs/NAME) the test
// names in its commands and the script files they run from workDir.
func (t *Test) helperRefs(workDir string) []string {
	fields := append([]string{t.Program(workDir), t.After, t.Setup, t.Cleanup}, t.Befores...)
	fields = append(fields, t.Requires...)
	var refs []string
	for _, f := range fields {
		for _, m := range helperRef.FindAllStringSubmatch(f, -1) {
			refs = append(refs, "test"+m[1]+"/"+m[2]+m[3])
		}
	}
	slices.Sort(refs)
	return slices.Compact(refs)
}

// Prepare builds the helpers the test names and returns why it cannot run
// with them, or "".
func (h *Helpers) Prepare(t *Test) string {
	if t.NewPidNS {
		return "NEW_PIDNS: the runner does not start helpers in a new pid namespace"
	}
	for _, ref := range h.expand(t.helperRefs(h.Dir)) {
		if err := h.build(ref); err != nil {
			return fmt.Sprintf("needs helper %s: %v", ref, err)
		}
	}
	return ""
}

// expand replaces each wildcard reference testprogs/NAME* by the helper
// programs whose sources' names start with NAME, and their -pie twins:
// the tests list or attach to the files the wildcard matches, so those
// must be built first.
func (h *Helpers) expand(refs []string) []string {
	var out []string
	for _, ref := range refs {
		prefix, wild := strings.CutSuffix(ref, "*")
		if !wild {
			out = append(out, ref)
			continue
		}
		kind, name, _ := strings.Cut(prefix, "/")
		if kind != "testprogs" {
			continue
		}
		for _, ext := range []string{".c", ".cpp"} {
			srcs, _ := filepath.Glob(filepath.Join(h.Src, kind, name+"*"+ext))
			for _, src := range srcs {
				base := strings.TrimSuffix(filepath.Base(src), ext)
				out = append(out, kind+"/"+base, kind+"/"+base+"-pie")
			}
		}
	}
	return out
}

// build builds one helper, once.
func (h *Helpers) build(ref string) error {
	h.mu.Lock()
	b := h.builds[ref]
	if b == nil {
		b = new(helperBuild)
		h.builds[ref] = b
	}
	h.mu.Unlock()
	b.once.Do(func() { b.err = h.compile(ref) })
	return b.err
}

// compile builds the helper ref (testprogs/NAME[-pie] or
// testlibs/libNAME.so) from its source.
func (h *Helpers) compile(ref string) error {
	kind, name, _ := strings.Cut(ref, "/")
	out := filepath.Join(h.Dir, ref)
	include := "-I" + filepath.Join(h.Src, "include")
	if kind == "testlibs" {
		base, ok := strings.CutSuffix(strings.TrimPrefix(name, "lib"), ".so")
		src := filepath.Join(h.Src, "testlibs", base+".c")
		if !ok || !fileExists(src) {
			return fmt.Errorf("no source for it in %s", filepath.Join(h.Src, "testlibs"))
		}
		if err := run("gcc", "-g", "-O0", "-fPIC", "-shared", include, src, "-o", out); err != nil {
			return err
		}
		// bpftrace must trace a shared object that is not executable.
		return os.Chmod(out, 0o644)
	}
	if cmd := h.otherLanguage(name, out); cmd != nil {
		if _, err := exec.LookPath(cmd[0]); err != nil {
			return fmt.Errorf("build it: %w", err)
		}
		return run(cmd[0], cmd[1:]...)
	}
	base, pie := strings.CutSuffix(name, "-pie")
	compiler, src := "gcc", filepath.Join(h.Src, "testprogs", base+".c")
	if !fileExists(src) {
		compiler, src = "g++", filepath.Join(h.Src, "testprogs", base+".cpp")
	}
	if !fileExists(src) {
		return fmt.Errorf("no C, C++, Go or Rust source for it in %s (derived helpers such as false.bin or stripped copies are not built)", filepath.Join(h.Src, "testprogs"))
	}
	if _, err := exec.LookPath(compiler); err != nil {
		return fmt.Errorf("build it: %w", err)
	}
	args := slices.Clone(progFlags)
	if base == "uprobe_nofp" {
		args = slices.Clone(noFramePointerFlags)
	}
	if pie {
		args = append(args, "-fpie", "-pie")
	} else {
		args = append(args, "-no-pie")
	}
	args = append(args, include, src, "-o", out)
	if base == "usdt_lib" {
		// usdt_lib's probes are in libusdt_tp.so, which it links.
		if err := h.build("testlibs/libusdt_tp.so"); err != nil {
			return err
		}
		libs := filepath.Join(h.Dir, "testlibs")
		args = append(args, "-fPIC", "-I"+filepath.Join(h.Src, "testlibs"), "-L"+libs, "-Wl,-rpath,"+libs, "-lusdt_tp")
	}
	return run(compiler, args...)
}

// otherLanguage returns the command that builds the Go or Rust helper
// program name into out, as bpftrace's CMake files do where the toolchain
// is present (no -pie twins), or nil when name has no such source.
func (h *Helpers) otherLanguage(name, out string) []string {
	src := filepath.Join(h.Src, "testprogs", name)
	switch {
	case fileExists(src + ".go"):
		return []string{"go", "build", "-o", out, src + ".go"}
	case fileExists(src + ".rs"):
		return []string{"rustc", "-C", "symbol_mangling_version=v0", "-o", out, src + ".rs"}
	}
	return nil
}

// run runs a compiler.
func run(name string, args ...string) error {
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("run %s: %v: %s", name, err, out)
	}
	return nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
