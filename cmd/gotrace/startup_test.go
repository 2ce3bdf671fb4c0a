package main

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// heavyInits are packages whose initialisers must not run in gotrace: what
// they set up only --metrics or the manual page's generator needed, and
// every start of gotrace paid for it (issue 24). A prefix ending in "/"
// names a module's every package.
var heavyInits = []string{
	"github.com/prometheus/",           // client_golang's registry and collectors
	"google.golang.org/protobuf/",      // the registry of every message type
	"github.com/russross/blackfriday/", // markdown tables: 214 KB, 762 allocations
	"github.com/cpuguy83/go-md2man/",
	"github.com/spf13/cobra/doc",
	"go.yaml.in/yaml/",
	"github.com/cilium/ebpf/rlimit", // creates a BPF map to probe the kernel
	"expvar",
	"runtime/metrics",
	// --metrics' HTTP server, TLS and web configuration run in the
	// gotrace-metrics process: in gotrace they cost 2.2 MiB of peak RSS
	// and 35 initialisers (net/http alone), 4.9 MiB and 72 with
	// exporter-toolkit.
	"net/http",
	"crypto/tls",
	"crypto/x509",
	"golang.org/x/net/",
	"golang.org/x/crypto/",
	"log/slog",
	"html/template",
}

// Bounds on what every initialiser together allocates, and gotrace's own
// packages among them, in bytes and allocations rather than time, which
// the machine's load changes. When heavyInits still ran, the total was
// 652 KB in 3,654 allocations; without them, 133 KB in 825 (lang's parser
// tables 14 KB of it).
const (
	maxInitBytes    = 256 << 10
	maxInitAllocs   = 1500
	maxOwnInitBytes = 32 << 10
)

// initLine is one line of GODEBUG=inittrace=1.
var initLine = regexp.MustCompile(`^init (\S+) @[0-9.]+ ms, [0-9.]+ ms clock, (\d+) bytes, (\d+) allocs$`)

// TestStartupInit runs the built gotrace with GODEBUG=inittrace=1 and
// fails when the initialiser of a heavy dependency runs or the
// initialisers allocate more than the bounds. Go runs every linked
// package's initialiser whatever the command, so --version shows the ones
// a plain script pays for.
func TestStartupInit(t *testing.T) {
	bin := buildGotrace(t)
	cmd := exec.Command(bin, "--version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if out, err := cmd.Output(); err != nil || !strings.HasPrefix(string(out), "gotrace ") {
		t.Fatalf("gotrace --version: %v, printed %q\n%s", err, out, stderr.String())
	}
	var inits, bytesTotal, allocsTotal, ownBytes int
	for line := range strings.Lines(stderr.String()) {
		m := initLine.FindStringSubmatch(strings.TrimSuffix(line, "\n"))
		if m == nil {
			continue
		}
		inits++
		pkg := m[1]
		n, _ := strconv.Atoi(m[2])
		allocs, _ := strconv.Atoi(m[3])
		bytesTotal += n
		allocsTotal += allocs
		if strings.HasPrefix(pkg, "github.com/gotrace/gotrace/") || pkg == "main" {
			ownBytes += n
		}
		for _, heavy := range heavyInits {
			if pkg == heavy || strings.HasSuffix(heavy, "/") && strings.HasPrefix(pkg, heavy) || strings.HasPrefix(pkg, heavy+"/") {
				t.Errorf("the initialiser of %s runs at every start of gotrace (%s bytes, %s allocations): keep the package out of the binary", pkg, m[2], m[3])
			}
		}
	}
	if inits == 0 {
		t.Fatalf("no initialiser in GODEBUG=inittrace=1's output:\n%s", stderr.String())
	}
	t.Logf("%d initialisers: %d bytes in %d allocations, %d bytes of them gotrace's own", inits, bytesTotal, allocsTotal, ownBytes)
	if bytesTotal > maxInitBytes || allocsTotal > maxInitAllocs {
		t.Errorf("the initialisers allocate %d bytes in %d allocations, over %d bytes or %d allocations: GODEBUG=inittrace=1 gotrace --version says which", bytesTotal, allocsTotal, maxInitBytes, maxInitAllocs)
	}
	if ownBytes > maxOwnInitBytes {
		t.Errorf("gotrace's own initialisers allocate %d bytes, over %d: build big tables when first used (sync.OnceValue) or as arrays of constants", ownBytes, maxOwnInitBytes)
	}
}
