package codegen

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gotrace/gotrace/internal/fixture"
	"github.com/gotrace/gotrace/internal/testenv"
	"github.com/gotrace/gotrace/internal/thread"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/usdt"
)

// fakeHost finds every bare target under /fake and gives every data
// symbol the same address, so that checking reads no file either.
type fakeHost struct{}

func (fakeHost) FindTarget(name string) (string, error) { return "/fake/" + name, nil }

func (fakeHost) ObjectSymbol(path, name string) (addr, size uint64, err error) {
	return 0x4000, 4, nil
}

// TestCompileOpensNoFile parses, resolves, checks and compiles every
// script of the repository (the fixture's scripts, the user scripts and
// the differential ones) on a thread that Landlock forbids to read any
// file, and wants the same programs as on a thread that may: lang asks
// its Host for what it needs of the machine, and the code generator works
// from the checked program alone (design.md: the Spec is host-independent;
// uaddr() reads lang.Program.Symbols, which the checker filled through the
// Host).
func TestCompileOpensNoFile(t *testing.T) {
	var paths []string
	for _, dir := range []string{"../testdata/scripts", "../scripts", "../testdata/diff"} {
		m, err := filepath.Glob(filepath.Join(dir, "*.bt"))
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, m...)
	}
	probes, err := usdt.ReadFile(fixture.Build(t, "bitcoind"))
	if err != nil {
		t.Fatal(err)
	}
	type script struct {
		path, src, listing string
	}
	var scripts []script
	for _, path := range paths {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// Scripts that show bpftrace's diagnostics, and scripts for other
		// variants of the fixture, do not compile here: what compiles
		// with files must compile without.
		if listing, err := compileWithoutFiles(path, string(src), probes); err == nil {
			scripts = append(scripts, script{path, string(src), listing})
		}
	}
	if len(scripts) < len(paths)/2 || !slices.ContainsFunc(scripts, func(s script) bool { return strings.HasSuffix(s.path, "/uaddr.bt") }) {
		t.Fatalf("only %d of %d scripts compile, uaddr.bt among them or not", len(scripts), len(paths))
	}

	err = thread.Restricted(denyFileReads, func() error {
		if _, err := os.ReadFile("/etc/hostname"); !errors.Is(err, fs.ErrPermission) {
			return fmt.Errorf("the restricted thread read a file: %v", err)
		}
		var failed []string
		for _, s := range scripts {
			listing, err := compileWithoutFiles(s.path, s.src, probes)
			switch {
			case err != nil:
				failed = append(failed, fmt.Sprintf("%s: %v", s.path, err))
			case listing != s.listing:
				failed = append(failed, s.path+": other programs without files")
			}
		}
		if len(failed) > 0 {
			return errors.New(strings.Join(failed, "\n"))
		}
		return nil
	})
	if errors.Is(err, errNoLandlock) {
		testenv.Unavailable(t, "%v", err)
	} else if err != nil {
		t.Error(err)
	}
}

// compileWithoutFiles parses, resolves, checks and compiles the script
// src at path with fakeHost, its usdt probes taken from probes, and
// returns the listing of its programs.
func compileWithoutFiles(path, src string, probes []usdt.Probe) (string, error) {
	p, err := lang.Parse(filepath.Base(path), src)
	if err != nil {
		return "", err
	}
	params := []string{"1", "100", "5"}
	cfg := lang.Config{Params: params, Host: fakeHost{}}
	info, err := lang.Analyze(p, cfg, nil)
	if err != nil {
		return "", err
	}
	opts := Options{USDT: map[*lang.AttachPoint][]*usdt.Probe{}}
	for _, pr := range p.Probes {
		for _, ap := range info.AttachPoints(pr) {
			for _, up := range probes {
				if ap.Kind == lang.ProbeUSDT && up.Name == ap.Func && (ap.Provider == "" || up.Provider == ap.Provider) {
					// Named as the script names the file, as the runtime
					// does.
					up.Path = ap.Target
					opts.USDT[ap] = append(opts.USDT[ap], &up)
				}
			}
		}
	}
	spec, err := Compile(info.ResolvedProgram(p), info, opts)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	spec.WriteListing(&b)
	return b.String(), nil
}

// errNoLandlock is denyFileReads' error where the kernel has no Landlock.
var errNoLandlock = errors.New("landlock is not available")

// denyFileReads forbids the calling thread to read, list or execute any
// file from now on, with a Landlock ruleset that handles those accesses
// and allows them nowhere.
func denyFileReads() error {
	attr := unix.LandlockRulesetAttr{
		Handled_access_fs: unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR | unix.LANDLOCK_ACCESS_FS_EXECUTE,
	}
	// Version 1's struct: the fields after Handled_access_fs came later.
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr.Handled_access_fs), 0)
	if errno != 0 {
		return fmt.Errorf("%w: create ruleset: %v", errNoLandlock, errno)
	}
	defer unix.Close(int(fd))
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); errno != 0 {
		return fmt.Errorf("restrict thread: %v", errno)
	}
	return nil
}
