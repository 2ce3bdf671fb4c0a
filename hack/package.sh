#!/usr/bin/env bash
# Build the Debian package bin/gotrace_VERSION_ARCH.deb with dpkg-deb: the
# static binaries gotrace, gotrace-metrics and gotrace-nats in /usr/bin, gotrace(8), the bash, zsh and fish completions
# in Debian's directories and the documents in /usr/share/doc/gotrace. The
# files are laid out by hack/install.sh, the one home of the install
# layout. Prints the package's path on its last line.
#
#   hack/package.sh && sudo apt-get install ./bin/gotrace_*.deb
#   GOARCH=arm64 hack/package.sh    # the arm64 package, cross-built
set -euo pipefail
cd "$(dirname "$0")/.."
case ":$PATH:" in
*:/usr/local/go/bin:*) ;;
*) export PATH=/usr/local/go/bin:$PATH ;;
esac

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
DESTDIR=$stage/root PREFIX=/usr ZSHCOMPDIR=/usr/share/zsh/vendor-completions \
	hack/install.sh >/dev/null

# The version gotrace prints (v0.1.0) without its v; the binary of
# another architecture cannot say it here, the version package can.
if [[ -n ${GOARCH:-} && $GOARCH != "$(go env GOHOSTARCH)" ]]; then
	version=$(GOARCH=$(go env GOHOSTARCH) go run ./cmd/gotrace --version)
else
	version=$("$stage/root/usr/bin/gotrace" --version)
fi
version=${version#gotrace v}
# Go's amd64 and arm64 are Debian's names too.
arch=${GOARCH:-$(dpkg --print-architecture)}
size=$(du -sk --apparent-size "$stage/root" | cut -f1)

mkdir "$stage/root/DEBIAN"
cat >"$stage/root/DEBIAN/control" <<CONTROL
Package: gotrace
Version: $version
Architecture: $arch
Maintainer: gotrace developers <gotrace@invalid>
Installed-Size: $size
Section: utils
Priority: optional
Suggests: man-db
Description: bpftrace-compatible tracer for USDT probes and uprobes
 gotrace runs bpftrace scripts against the USDT probes and functions of
 user-space programs (Bitcoin Core, Python, PostgreSQL, the JVM) and
 prints what bpftrace prints. It is one static binary: it compiles the
 script to eBPF itself, without LLVM or clang.
CONTROL

mkdir -p bin
deb=bin/gotrace_${version}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$stage/root" "$deb" >/dev/null
echo "$deb"
