#!/usr/bin/env bash
# The VM harness's two jobs (internal/vmtest, docs/vmtest.md):
#
#   hack/vmtest.sh fetch   put Debian's kernel and busybox-static for amd64
#                          and arm64 into the cache; idempotent, no apt work
#                          when they are there (hack/setup.sh runs it)
#   hack/vmtest.sh         fetch, then run the whole VM suite: every case in
#                          the emulated x86-64 and arm64 guests
#                          (GOTRACE_VMTEST=all), not only the smoke set that
#                          go test ./... runs
#
# The cache is $GOTRACE_VMTEST_CACHE, or /var/cache/gotrace-vmtest, outside
# the repository: ARCH/kernel (amd64's unpacked vmlinux, arm64's Image),
# ARCH/config, ARCH/busybox and ARCH/release (the kernel's release),
# extracted from the .deb files apt downloads into debs/ and deletes again.
# Everything comes from Debian's archive through apt; the arm64 packages
# need dpkg's arm64 architecture, which fetch adds.
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${GOTRACE_VMTEST_CACHE:-/var/cache/gotrace-vmtest}

# fetch_arch ARCH puts ARCH's kernel and busybox into $cache/ARCH.
fetch_arch() {
	local arch=$1 dir=$cache/$1
	if [[ -s $dir/kernel && -s $dir/busybox && -s $dir/release ]]; then
		return
	fi
	if [[ $(id -u) -ne 0 ]]; then
		echo "hack/vmtest.sh: fetching the $arch kernel needs root (apt-get)" >&2
		exit 1
	fi
	if [[ $arch != "$(dpkg --print-architecture)" ]] && ! dpkg --print-foreign-architectures | grep -qx "$arch"; then
		dpkg --add-architecture "$arch"
		apt-get update
	fi
	# The kernel Debian's linux-image-ARCH meta-package points at now:
	# linux-image-6.1.0-N-ARCH, taken in its -unsigned build (the same
	# kernel without the secure-boot signature, which qemu does not check).
	local image
	image=$(apt-cache depends "linux-image-$arch:$arch" | sed -n 's/^ *Depends: \(linux-image-[0-9.-]*-'"$arch"'\)\(:.*\)\?$/\1/p' | head -n1)
	if [[ -z $image ]]; then
		apt-get update
		image=$(apt-cache depends "linux-image-$arch:$arch" | sed -n 's/^ *Depends: \(linux-image-[0-9.-]*-'"$arch"'\)\(:.*\)\?$/\1/p' | head -n1)
	fi
	if [[ -z $image ]]; then
		echo "hack/vmtest.sh: apt knows no linux-image-$arch:$arch" >&2
		exit 1
	fi
	mkdir -p "$cache/debs" "$dir"
	# apt-get download writes to the current directory; as root it warns
	# that its _apt user cannot, and downloads anyway.
	(cd "$cache/debs" && apt-get download "$image-unsigned:$arch" "busybox-static:$arch" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
	local kdeb bdeb x
	kdeb=$(ls -t "$cache/debs/$image-unsigned_"*"_$arch.deb" | head -n1)
	bdeb=$(ls -t "$cache/debs/busybox-static_"*"_$arch.deb" | head -n1)
	x=$(mktemp -d)
	dpkg-deb -x "$kdeb" "$x/k"
	dpkg-deb -x "$bdeb" "$x/b"
	local release=${image#linux-image-}
	if [[ $arch == amd64 ]]; then
		# The bzImage's xz payload, unpacked: an ELF vmlinux with a PVH
		# entry (CONFIG_PVH), which qemu starts directly. The guest then
		# skips SeaBIOS's real-mode loader and decompressing under TCG:
		# 9 s to /init instead of 22 s on a loaded 2-core host.
		local off
		off=$(grep -abo $'\xfd7zXZ' "$x/k/boot/vmlinuz-$release" | head -n1 | cut -d: -f1)
		# xz stops after the stream, so tail may die of SIGPIPE: the
		# result is checked instead of the pipeline's status.
		tail -c +$((off + 1)) "$x/k/boot/vmlinuz-$release" | xz -dcq --single-stream >"$dir/kernel.new" || true
		if [[ $(head -c 4 "$dir/kernel.new" | od -An -c | tr -d ' ') != '177ELF' ]]; then
			echo "hack/vmtest.sh: no xz-compressed vmlinux in $kdeb's vmlinuz-$release" >&2
			exit 1
		fi
	else
		# arm64's vmlinuz is already an uncompressed Image.
		cp "$x/k/boot/vmlinuz-$release" "$dir/kernel.new"
	fi
	cp "$x/k/boot/config-$release" "$dir/config"
	cp "$x/b/bin/busybox" "$dir/busybox.new"
	mv "$dir/kernel.new" "$dir/kernel"
	mv "$dir/busybox.new" "$dir/busybox"
	echo "$release" >"$dir/release"
	# Only the extracted files are used: the packages go.
	rm -rf "$x" "$kdeb" "$bdeb"
	echo "hack/vmtest.sh: $arch: $image, $(du -sh "$dir" | cut -f1) in $dir"
}

fetch() {
	fetch_arch amd64
	fetch_arch arm64
}

case ${1:-run} in
fetch)
	fetch
	;;
run)
	fetch
	case ":$PATH:" in
	*:/usr/local/go/bin:*) ;;
	*) export PATH=/usr/local/go/bin:$PATH ;;
	esac
	GOTRACE_VMTEST=all go test -count=1 -timeout 60m -v ./internal/vmtest/... "${@:2}"
	;;
*)
	echo "usage: hack/vmtest.sh [fetch|run [go test flags]]" >&2
	exit 2
	;;
esac
