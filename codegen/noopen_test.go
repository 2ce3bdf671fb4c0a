package codegen

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gotrace/gotrace/internal/fixture"
	"github.com/gotrace/gotrace/internal/testenv"
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

// TestCompileOpensNoFile compiles every script of the repository (the
// fixture's scripts, the user scripts and the differential ones) on a
// thread that Landlock forbids to read any file, and wants the same
// programs as on a thread that may: the code generator works from the
// checked program alone (design.md: the Spec is host-independent; uaddr()
// reads lang.Program.Symbols, which the checker filled through the Host).
func TestCompileOpensNoFile(t *testing.T) {
	var scripts []string
	for _, dir := range []string{"../testdata/scripts", "../scripts", "../testdata/diff"} {
		m, err := filepath.Glob(filepath.Join(dir, "*.bt"))
		if err != nil {
			t.Fatal(err)
		}
		scripts = append(scripts, m...)
	}
	probes, err := usdt.ReadFile(fixture.Build(t, "bitcoind"))
	if err != nil {
		t.Fatal(err)
	}
	type job struct {
		name    string
		p       *lang.Program
		opts    Options
		listing string
	}
	var jobs []job
	for _, script := range scripts {
		src, err := os.ReadFile(script)
		if err != nil {
			t.Fatal(err)
		}
		p, err := lang.Parse(filepath.Base(script), string(src))
		if err != nil {
			t.Fatal(err)
		}
		params := []string{"1", "100", "5"}
		cfg := lang.Config{Params: params, Host: fakeHost{}}
		if lang.Resolve(p, cfg) != nil || lang.Check(p, cfg) != nil {
			// A script that shows bpftrace's diagnostics.
			continue
		}
		opts := Options{Params: params, USDT: map[*lang.AttachPoint][]*usdt.Probe{}}
		for _, pr := range p.Probes {
			for _, ap := range pr.Attach {
				for _, pr := range probes {
					if ap.Kind == lang.ProbeUSDT && pr.Name == ap.Func && (ap.Provider == "" || pr.Provider == ap.Provider) {
						// Named as the script names the file, as the
						// runtime does.
						pr.Path = ap.Target
						opts.USDT[ap] = append(opts.USDT[ap], &pr)
					}
				}
			}
		}
		// Scripts for other variants of the fixture may not compile
		// against this one: what compiles here must compile there.
		spec, err := Compile(p, opts)
		if err != nil {
			continue
		}
		var b bytes.Buffer
		spec.WriteListing(&b)
		jobs = append(jobs, job{script, p, opts, b.String()})
	}
	if len(jobs) < len(scripts)/2 || !slices.ContainsFunc(jobs, func(j job) bool { return strings.HasSuffix(j.name, "/uaddr.bt") }) {
		t.Fatalf("only %d of %d scripts compile, uaddr.bt among them or not", len(jobs), len(scripts))
	}

	errc := make(chan error, 1)
	go func() {
		// Never unlocked: the thread ends with this goroutine, and its
		// restriction with it.
		goruntime.LockOSThread()
		if err := denyFileReads(); err != nil {
			errc <- err
			return
		}
		if _, err := os.ReadFile("/etc/hostname"); !errors.Is(err, fs.ErrPermission) {
			errc <- fmt.Errorf("the restricted thread read a file: %v", err)
			return
		}
		var failed []string
		for _, j := range jobs {
			spec, err := Compile(j.p, j.opts)
			if err != nil {
				failed = append(failed, fmt.Sprintf("%s: %v", j.name, err))
				continue
			}
			var b bytes.Buffer
			spec.WriteListing(&b)
			if b.String() != j.listing {
				failed = append(failed, j.name+": other programs without files")
			}
		}
		if len(failed) > 0 {
			errc <- errors.New(strings.Join(failed, "\n"))
			return
		}
		errc <- nil
	}()
	if err := <-errc; errors.Is(err, errNoLandlock) {
		testenv.Unavailable(t, "%v", err)
	} else if err != nil {
		t.Error(err)
	}
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
