#!/usr/bin/env bash
# Build the Debian package, install it with apt, use the installed gotrace
# (--version, a usdt script against the bitcoind fixture, man -w), remove
# it with --purge and check that none of its files or directories is left.
# Needs root, dpkg-deb, apt-get, gcc and <sys/sdt.h> (hack/setup.sh); it
# installs man-db when man is missing.
# Prints "hack/package-test.sh: PASS" or "... FAIL: why" and exits non-zero
# on failure. A gotrace package installed before is removed first.
set -euo pipefail
cd "$(dirname "$0")/.."
case ":$PATH:" in
*:/usr/local/go/bin:*) ;;
*) export PATH=/usr/local/go/bin:$PATH ;;
esac
export DEBIAN_FRONTEND=noninteractive

fail() {
	echo "hack/package-test.sh: FAIL: $*"
	exit 1
}
if [[ $(id -u) -ne 0 ]]; then
	fail "must run as root (apt-get, and the usdt script loads eBPF)"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# man -w needs man-db (hack/setup.sh installs it; a bare CI machine may not
# have it) and the check for a static binary needs file.
if ! command -v man >/dev/null || ! command -v file >/dev/null; then
	{ apt-get update && apt-get install -y man-db file; } >"$work/apt.log" 2>&1 || {
		cat "$work/apt.log"
		fail "apt-get install man-db file"
	}
fi

deb=$(hack/package.sh | tail -1) || fail "hack/package.sh failed"
echo "built $deb"
if dpkg-query -W -f='${Status}' gotrace 2>/dev/null | grep -q 'install ok installed'; then
	apt-get remove --purge -y gotrace >"$work/apt.log" 2>&1 || fail "remove the gotrace package installed before"
fi

# The package's directories that exist before it is installed (/usr/bin,
# /usr/share/man/man8 ...) stay after it is removed; everything else goes.
dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|; s|/$||' | grep -v '^$' >"$work/contents"
while read -r path; do
	[[ -e $path ]] && echo "$path"
done <"$work/contents" >"$work/before"

apt-get install -y "./$deb" >"$work/apt.log" 2>&1 || {
	cat "$work/apt.log"
	fail "apt-get install ./$deb"
}
dpkg -L gotrace | grep -v '^/\.$' >"$work/listed"

version=$(/usr/bin/gotrace --version) || fail "gotrace --version"
echo "installed: $version"
for b in /usr/bin/gotrace /usr/bin/gotrace-metrics /usr/bin/gotrace-nats; do
	[[ $(file -b $b) == *"statically linked"* ]] || fail "$b is not statically linked"
done

# A usdt script from the installed binary against the fixture.
go run ./internal/fixture/cmd/buildfixture "$work/fixture" >/dev/null
(
	cd "$work/fixture/bitcoind"
	/usr/bin/gotrace -q -c "./bitcoind --rounds 2 --blocks 1" \
		-e 'usdt:./bitcoind:net:inbound_message { @inbound = count(); }'
) >"$work/trace" 2>&1 || {
	cat "$work/trace"
	fail "the usdt script did not run"
}
grep -E '^@inbound: [1-9][0-9]*$' "$work/trace" || {
	cat "$work/trace"
	fail "the usdt script counted no inbound_message"
}

page=$(man -w gotrace) || fail "man -w gotrace"
[[ $page == /usr/share/man/man8/gotrace.8.gz ]] || fail "man -w gotrace gives $page"
MANPAGER=cat MANWIDTH=80 man gotrace 2>/dev/null | grep -q 'DIFFERENCES FROM BPFTRACE' || fail "man gotrace lacks its hand-written sections"
for f in /usr/share/bash-completion/completions/gotrace /usr/share/zsh/vendor-completions/_gotrace /usr/share/fish/vendor_completions.d/gotrace.fish; do
	grep -q gotrace "$f" || fail "completion $f missing"
done
echo "man -w gotrace: $page; completions for bash, zsh and fish"

apt-get remove --purge -y gotrace >"$work/apt.log" 2>&1 || {
	cat "$work/apt.log"
	fail "apt-get remove --purge gotrace"
}
left=()
while read -r path; do
	if [[ -e $path ]] && ! grep -qxF "$path" "$work/before"; then
		left+=("$path")
	fi
done < <(sort -u "$work/listed" "$work/contents")
((${#left[@]} == 0)) || fail "left after apt-get remove --purge: ${left[*]}"
if dpkg-query -W -f='${Status}' gotrace 2>/dev/null | grep -q installed; then
	fail "dpkg still knows gotrace: $(dpkg-query -W -f='${Status}' gotrace)"
fi
echo "removed: $(wc -l <"$work/listed") paths listed by dpkg -L, none left"
echo "hack/package-test.sh: PASS"
