#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/tools/mkroot.sh -- a minimal Debian 12 root, as a newcomer's machine
# is: mmdebstrap --variant=minbase plus make and git (and any packages named).
#
#   mkroot.sh create DIR [PKG...]   unpack a fresh root into DIR (absent or empty)
#   mkroot.sh run DIR CMD [ARG...]  run CMD as root, chrooted in DIR, in a mount
#                                   namespace of its own with /proc, /sys, /dev
#                                   (null, zero, full, random, urandom, tty),
#                                   /dev/pts and /dev/shm (a tmpfs of its own);
#                                   the namespace, so every mount, ends with CMD,
#                                   and processes CMD left behind are killed
#   mkroot.sh destroy DIR           kill what still runs in DIR, unmount what is
#                                   mounted under it, delete it
#
# The tarball mmdebstrap makes is cached in $MC_ROOT_CACHE (default
# /var/cache/mooncake/mkroot), one per package list, and remade when older
# than $MC_ROOT_MAX_DAYS (default 7) days: a rerun starts from the same
# minimal root in seconds.  The .debs apt-get downloads inside a root are
# kept in $MC_ROOT_CACHE/archives and handed to the next root's apt, so
# installing the same packages again needs no download (apt still installs
# each of them).  $MC_ROOT_SUITE (bookworm) and $MC_ROOT_MIRROR
# (http://deb.debian.org) choose the release and the archive.
#
# Needs root and mmdebstrap (apt-get install mmdebstrap).
set -eu

suite=${MC_ROOT_SUITE:-bookworm}
mirror=${MC_ROOT_MIRROR:-http://deb.debian.org}
cache=${MC_ROOT_CACHE:-/var/cache/mooncake/mkroot}
max_days=${MC_ROOT_MAX_DAYS:-7}

die() { echo "mkroot: $*" >&2; exit 1; }
usage() { sed -n '3,13p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

[ "$(id -u)" -eq 0 ] || die "needs root (chroot, mounts); run it as root"

# tarball PKG...: the cached root tarball for these packages, made if absent
# or stale; prints its path.
tarball() {
	command -v mmdebstrap >/dev/null ||
		die "mmdebstrap is not installed: apt-get install mmdebstrap"
	local include key tar
	include=$(printf '%s\n' make git "$@" | sort -u | paste -sd, -)
	key=$(printf '%s %s %s' "$suite" "$mirror" "$include" | sha256sum | cut -c1-16)
	tar=$cache/$suite-minbase-$key.tar
	mkdir -p "$cache"
	(
		flock 9
		if [ -s "$tar" ] && [ -z "$(find "$tar" -mtime +"$max_days")" ]; then
			exit 0
		fi
		echo "mkroot: mmdebstrap $suite (minbase + $include) into $tar" >&2
		rm -f "$tar.tmp"
		mmdebstrap --quiet --variant=minbase --include="$include" --format=tar "$suite" "$tar.tmp" \
			"deb $mirror/debian $suite main" \
			"deb $mirror/debian $suite-updates main" \
			"deb $mirror/debian-security $suite-security main" >&2
		mv "$tar.tmp" "$tar"
	) 9>"$cache/lock" || die "mmdebstrap failed"
	echo "$tar"
}

# procs_in DIR: pids of processes whose root directory is DIR.
procs_in() {
	local d p
	d=$(readlink -f "$1")
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/root" 2>/dev/null)" = "$d" ] && echo "${p#/proc/}"
	done
	return 0
}

cmd_create() {
	[ $# -ge 1 ] || usage
	local dir=$1 tar
	shift
	if [ -e "$dir" ] && [ -n "$(ls -A "$dir")" ]; then
		die "$dir is not empty (mkroot.sh destroy $dir first)"
	fi
	tar=$(tarball "$@")
	mkdir -p "$dir"
	tar -C "$dir" --numeric-owner -xpf "$tar"
	cp -L /etc/resolv.conf "$dir/etc/resolv.conf" 2>/dev/null || true
	# the .debs an earlier root downloaded (hard links when the filesystem allows)
	if compgen -G "$cache/archives/*.deb" >/dev/null; then
		cp -l "$cache"/archives/*.deb "$dir/var/cache/apt/archives/" 2>/dev/null ||
			cp "$cache"/archives/*.deb "$dir/var/cache/apt/archives/"
	fi
}

# Inside the private mount namespace (mkroot.sh run re-executes itself here).
cmd_in_ns() {
	local dir=$1 rc=0 n
	shift
	mount -t proc proc "$dir/proc"
	mount --rbind /sys "$dir/sys"
	mount -t tmpfs -o mode=0755,size=1M,nosuid dev "$dir/dev"
	for n in null zero full random urandom tty; do
		: >"$dir/dev/$n"
		mount --bind "/dev/$n" "$dir/dev/$n"
	done
	mkdir -p "$dir/dev/pts" "$dir/dev/shm"
	mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts "$dir/dev/pts"
	ln -s pts/ptmx "$dir/dev/ptmx"
	mount -t tmpfs -o mode=1777,nosuid,nodev shm "$dir/dev/shm"
	ln -s /proc/self/fd "$dir/dev/fd"
	ln -s /proc/self/fd/0 "$dir/dev/stdin"
	ln -s /proc/self/fd/1 "$dir/dev/stdout"
	ln -s /proc/self/fd/2 "$dir/dev/stderr"
	chroot "$dir" /usr/bin/env -i HOME=/root TERM="${TERM:-dumb}" LANG=C.UTF-8 \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@" || rc=$?
	exit "$rc"
}

cmd_run() {
	[ $# -ge 2 ] || usage
	local dir rc=0 p
	dir=$(readlink -f "$1")
	shift
	[ -x "$dir/usr/bin/env" ] || die "$dir is not a root made by mkroot.sh create"
	unshare --mount --propagation private -- "$0" _in_ns "$dir" "$@" || rc=$?
	# daemons CMD left running: they are ours, and their mounts went with the namespace
	for p in $(procs_in "$dir"); do kill -KILL "$p" 2>/dev/null || true; done
	# keep what apt-get downloaded for the next root
	mkdir -p "$cache/archives"
	if compgen -G "$dir/var/cache/apt/archives/*.deb" >/dev/null; then
		cp -n "$dir"/var/cache/apt/archives/*.deb "$cache/archives/" 2>/dev/null || true
	fi
	return "$rc"
}

cmd_destroy() {
	[ $# -eq 1 ] || usage
	local dir p m
	[ -e "$1" ] || return 0
	dir=$(readlink -f "$1")
	[ "$dir" != / ] || die "refusing to destroy /"
	for p in $(procs_in "$dir"); do kill -KILL "$p" 2>/dev/null || true; done
	# anything mounted under DIR from this namespace (normally nothing)
	for m in $(findmnt -rn -o TARGET | grep "^$dir/" | sort -r); do
		umount -l "$m" 2>/dev/null || true
	done
	if findmnt -rn -o TARGET | grep -q "^$dir/"; then
		die "something is still mounted under $dir; not deleting it"
	fi
	rm -rf --one-file-system "$dir"
}

[ $# -ge 1 ] || usage
verb=$1
shift
case "$verb" in
create) cmd_create "$@" ;;
run) cmd_run "$@" ;;
_in_ns) cmd_in_ns "$@" ;;
destroy) cmd_destroy "$@" ;;
*) usage ;;
esac
