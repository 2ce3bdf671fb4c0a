#!/usr/bin/env bash
# The project's one test command (the README's and CI's): go vet, a
# go mod tidy check, a gofmt check, every test once (go test -count=1 ./...),
# the runtime's tests again under the race detector, the Debian package's
# install and removal (hack/package-test.sh) and a bounded run of every
# fuzz target. It runs every step even when one fails and exits non-zero if
# any did, so one CI run shows every problem.
#
# The log starts with gotrace --info: what this machine can do (the
# capability table that decides which tests skip) and who runs the tests.
# Each phase's time is printed when it ends and again in a summary at the
# end, with the set-up's when .ci/run passes it (SETUP_SECONDS).
#
# Environment:
#   FUZZTIME   how long each Fuzz* target runs, as go test's -fuzztime
#              takes it; unset, each target is given a count of executions
#              (fuzz_execs below: about 6 s of each on the 2-core AMD
#              machines, 3 of the 15 minutes a CI run may take); 0 skips
#              fuzzing
#   TESTFLAGS  extra flags for the go test step (e.g. "-run TestDiff -v")
#   CI=true    tests that need root, gcc, bpftrace or a system binary fail
#              instead of skipping (internal/testenv)
set -uo pipefail

cd "$(dirname "$0")/.."
case ":$PATH:" in
*:/usr/local/go/bin:*) ;;
*) export PATH=/usr/local/go/bin:$PATH ;;
esac

fuzztime=${FUZZTIME:-}
failed=()
start=$SECONDS

step() {
	echo
	echo "==> $* ($(date -u +%H:%M:%S))"
}

# phase_done NAME ends the phase called NAME, which began when the last
# one ended: its seconds are printed now and kept for the summary.
phases=()
if [[ -n ${SETUP_SECONDS:-} ]]; then
	phases+=("$(printf '%-32s %5ss' 'set-up (hack/setup.sh)' "$SETUP_SECONDS")")
fi
phase_start=$SECONDS
phase_done() {
	local took=$((SECONDS - phase_start))
	echo "hack/test.sh: $1 took ${took}s"
	phases+=("$(printf '%-32s %5ss' "$1" "$took")")
	phase_start=$SECONDS
}

# fuzz_execs PKG TARGET prints the executions TARGET of PKG is given when
# FUZZTIME is unset: about six seconds' worth on the 2-core AMD machines,
# so a faster machine finishes sooner and a loaded one later, but never
# fails for it. A budget in seconds would: Go's fuzzing coordinator can
# fail a target at the end of a timed -fuzztime with "context deadline
# exceeded" and no failing input, a race between the -fuzztime context and
# its workers' (Go issue 75804, fixed in Go 1.27, in no 1.26 release). It
# failed CI twice in a row on 7 December 2026, so running it once more is
# not enough; a count sets no deadline to race.
fuzz_execs() {
	case "${1#github.com/gotrace/gotrace/} $2" in
	# each of these runs a whole stage for an input (a replay, an ELF
	# file, the checker, codegen), and some inputs run slowly
	"runtime FuzzReplay") echo 30000x ;;
	"runtime/debuginfo FuzzFuncParams") echo 5000x ;; # an ELF file and its DWARF per input
	"usdt FuzzFile") echo 60000x ;;
	"usdt FuzzReadNotes" | "codegen FuzzCompile" | "lang FuzzCheck" | "lang FuzzParse") echo 80000x ;;
	*) echo 150000x ;;
	esac
}

# fuzz PKG TARGET runs one fuzz target. Minimizing is capped so that a
# large interesting input cannot stall the run.
fuzz() {
	local budget=${fuzztime:-$(fuzz_execs "$1" "$2")}
	step go test -run='^$' -fuzz="^$2\$" -fuzztime="$budget" "$1"
	go test -run='^$' -fuzz="^$2\$" -fuzztime="$budget" -fuzzminimizetime=5s "$1"
}

step gotrace --info
# bpftrace prints --info on stderr, and so does gotrace.
go run ./cmd/gotrace --info 2>&1 || echo "hack/test.sh: gotrace --info failed (the build errors show again below)"
phase_done "capability table"

step go vet ./...
if ! go vet ./...; then
	failed+=("go vet")
fi

step go mod tidy -diff
# go.mod must list what the code imports directly as direct, and nothing
# it does not need.
if ! go mod tidy -diff; then
	failed+=("go mod tidy")
fi

step gofmt -l
unformatted=$(find . -name '*.go' -not -path './.git/*' -not -path '*/testdata/*' -print0 | xargs -0 gofmt -l)
if [[ -n $unformatted ]]; then
	echo "not gofmt'ed:"
	echo "$unformatted"
	failed+=("gofmt")
fi

phase_done "go vet, go mod tidy, gofmt"

step go test -count=1 ./... ${TESTFLAGS:-}
# The events go through hack/testlog, which prints what a plain go test
# prints (package lines, failed tests' output) and then every skipped test
# with its reason: the log says what did not run on this machine and why.
testlog=$(mktemp -d)/testlog
if ! go build -o "$testlog" ./hack/testlog; then
	failed+=("build hack/testlog")
fi
# shellcheck disable=SC2086 # TESTFLAGS is a list of flags.
go test -count=1 -timeout 30m -json ${TESTFLAGS:-} ./... | "$testlog"
if ((PIPESTATUS[0] != 0)); then
	failed+=("go test")
fi
rm -rf "$(dirname "$testlog")"

phase_done "go test"

step go test -race -count=1 ./runtime/...
# The run's goroutines (ring readers, the out queue, tickers, a -c
# command's library loads attached by a reader) meet in package runtime
# and below: its tests once more under the race detector (about a
# minute on 2 cores). A data race there is a failure, not a warning.
if ! go test -race -count=1 -timeout 20m ./runtime/...; then
	failed+=("go test -race")
fi

phase_done "race"

step hack/package-test.sh
# The Debian package, installed with apt and removed again: needs root.
if [[ $(id -u) -eq 0 ]]; then
	if ! hack/package-test.sh; then
		failed+=("package test")
	fi
elif [[ ${CI:-} == true ]]; then
	echo "hack/package-test.sh needs root"
	failed+=("package test")
else
	echo "skipped: hack/package-test.sh needs root"
fi

phase_done "package test"

if [[ $fuzztime != 0 && $fuzztime != 0s ]]; then
	# The targets are found by their declarations rather than by
	# go test -list, which links every package's test binary only to list
	# it: a minute of the phase on 2 cores, for the few packages that fuzz.
	for dir in $(grep -rl --include='*_test.go' '^func Fuzz[A-Z0-9_]' . | xargs -n1 dirname | sort -u); do
		pkg=$(go list "$dir")
		targets=$(grep -h -o '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go | sed 's/^func //' | sort -u)
		for f in $targets; do
			if ! fuzz "$pkg" "$f"; then
				failed+=("fuzz $pkg $f")
			fi
		done
	done
fi

if [[ $fuzztime != 0 && $fuzztime != 0s ]]; then
	phase_done "fuzzing (${fuzztime:-a count of executions} a target)"
else
	phase_done "fuzzing (skipped: FUZZTIME=0)"
fi

echo
echo "hack/test.sh: time by phase"
for p in "${phases[@]}"; do
	echo "  $p"
done
if ((${#failed[@]} > 0)); then
	echo "hack/test.sh: FAIL after $((SECONDS - start))s: ${failed[*]}"
	exit 1
fi
echo "hack/test.sh: ok after $((SECONDS - start))s"
