package runtime

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gotrace/gotrace/lang"
)

// resolveTargets replaces the target of every usdt, uprobe and uretprobe
// attach point of p that is a bare name (no '/', no wildcard) by the file
// bpftrace 0.17 finds for it, so that the probe builtin prints that path
// as bpftrace's does: see findTarget. A file in the working directory
// keeps its name as written (usdt:bitcoind:...). A name found nowhere is
// an error in bpftrace's words. objs are the objects of the -c command or
// the -p process; with -p they may be nil (nothing needed them), and are
// then read when a library name needs them.
func resolveTargets(p *lang.Program, opts Options, objs []string) error {
	var errs lang.ErrorList
	for _, pr := range p.Probes {
		for _, ap := range pr.Attach {
			if !bareTarget(ap) {
				continue
			}
			if objs == nil && opts.PID != 0 && strings.HasPrefix(ap.Target, "lib") {
				// The process is there: what it maps decides, and when
				// it cannot be read the other places still do.
				objs, _ = processObjects(opts.PID)
			}
			mapped, loaded := objs, []string(nil)
			if opts.Command != "" {
				mapped, loaded = nil, objs
			}
			path := findTarget(ap.Target, mapped, loaded)
			if path == "" {
				kind := "uprobe"
				if ap.Kind == lang.ProbeUSDT {
					kind = "usdt"
				}
				errs = append(errs, &lang.Error{
					Span: ap.Loc,
					Msg:  fmt.Sprintf("%s target file '%s' does not exist or is not executable", kind, ap.Target),
					Hint: targetHint(ap.Target),
				})
				continue
			}
			ap.Target = path
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// bareTarget reports whether ap is a usdt, uprobe or uretprobe attach
// point whose target is a bare file name.
func bareTarget(ap *lang.AttachPoint) bool {
	switch ap.Kind {
	case lang.ProbeUSDT, lang.ProbeUprobe, lang.ProbeUretprobe:
	default:
		return false
	}
	return ap.Target != "" && !strings.ContainsAny(ap.Target, "/*?")
}

// targetHint says where a bare target name was looked for.
func targetHint(name string) string {
	if strings.HasPrefix(name, "lib") {
		return "looked for as " + name + ".so* in the loader's cache (ldconfig -p) and among the objects of a -p process or -c command, then in the working directory and $PATH; a library is named without .so (libc)"
	}
	return "looked for in the working directory and $PATH; a library is named by lib and its name without .so (libc)"
}

// findTarget returns the file a bare target name stands for, or "" when
// there is none. As bpftrace 0.17 finds it:
//
//   - for a name that starts with "lib" (libc, libpython3.11), first an
//     object of the -p process (mapped) whose path holds "/NAME." or
//     "/NAME-" (/usr/lib/x86_64-linux-gnu/libc.so.6), then the first
//     library of the loader's cache whose soname starts with "NAME.so"
//     (/lib/x86_64-linux-gnu/libc.so.6);
//   - the file of that name in the working directory, returned as name;
//   - the first ELF file of that name in a $PATH directory
//     (python3.11: /usr/bin/python3.11).
//
// And where 0.17 finds nothing: a library that the -c command loads at
// start-up (loaded) but the cache does not have, found as in mapped.
func findTarget(name string, mapped, loaded []string) string {
	if strings.HasPrefix(name, "lib") {
		for _, path := range []string{mappedLibrary(name, mapped), cachedLibrary(name), mappedLibrary(name, loaded)} {
			if path != "" {
				return path
			}
		}
	}
	if isELFFile(name) {
		return name
	}
	return pathExecutable(name)
}

// mappedLibrary returns the first of objs whose path holds "/NAME." or
// "/NAME-", or "".
func mappedLibrary(name string, objs []string) string {
	for _, o := range objs {
		if strings.Contains(o, "/"+name+".") || strings.Contains(o, "/"+name+"-") {
			return o
		}
	}
	return ""
}

// cachedLibrary returns the path of the first library of the loader's
// cache whose soname starts with "NAME.so", or "".
func cachedLibrary(name string) string {
	entries, err := readLdCache()
	if err != nil {
		return ""
	}
	for _, e := range entries {
		if strings.HasPrefix(e.name, name+".so") {
			return e.path
		}
	}
	return ""
}

// pathExecutable returns the first ELF file called name in a directory of
// $PATH, or "".
func pathExecutable(name string) string {
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if dir == "" {
			continue
		}
		if path := filepath.Join(dir, name); isELFFile(path) {
			return path
		}
	}
	return ""
}

// isELFFile reports whether path is a regular file that debug/elf can
// read.
func isELFFile(path string) bool {
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() {
		return false
	}
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	f.Close()
	return true
}
