#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# packaging/deps.sh build|run|test|bench|pkg|fresh|image|all -- install the Debian 12 packages a
# purpose needs, if any is missing.  Needs root (apt-get) only when something
# is missing; prints what it installs.
set -eu
build=(make gcc clang pkg-config libxxhash-dev libjansson-dev libcurl4-openssl-dev
       liburing-dev libbpf-dev bpftool libibverbs-dev librdmacm-dev libmicrohttpd-dev
       libinih-dev libsqlite3-dev systemtap-sdt-dev llvm libelf-dev zlib1g-dev
       libssl-dev libisal-dev)
# (900-install checks the units with systemd-analyze and systemd-sysusers,
# both in systemd, and the man pages with man, in man-db)
test=(libcmocka-dev bats bats-assert bats-support perl iproute2 jq curl python3
      python3-dev python3-setuptools python3-pytest python3-venv
      redis-server redis-tools libclang-rt-14-dev prometheus groff-base etcd-server etcd-client
      systemd man-db)
# make bench (tests/bench: bench-disk runs fio beside the disk tier; perf-profile.sh
# records with perf; put-trips.sh counts syscalls with strace, instructions with valgrind)
bench=(fio linux-perf strace valgrind)
# make deb, make rpm, make test-packages (tests/packaging)
pkg=(debhelper dpkg-dev lintian rpm rpm2cpio rpmlint elfutils mmdebstrap
     dh-python python3-dev python3-setuptools)
# make test-fresh (tests/fresh-root.sh)
fresh=(git mmdebstrap)
# make image, image-test, image-test-cluster (image/; make deb's come from pkg)
image=(mmdebstrap e2fsprogs qemu-system-x86)

case "${1:-all}" in
build|run) want=("${build[@]}") ;;
test|all)  want=("${build[@]}" "${test[@]}") ;;
bench)     want=("${build[@]}" "${bench[@]}") ;;
pkg)       want=("${build[@]}" "${pkg[@]}") ;;
fresh)     want=("${fresh[@]}") ;;
image)     want=("${image[@]}") ;;
*) echo "usage: $0 build|run|test|bench|pkg|fresh|image|all" >&2; exit 2 ;;
esac

missing=()
for p in "${want[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "deps: missing Debian packages: ${missing[*]}" >&2
	echo "deps: run 'sudo $0 ${1:-all}' (or as root) to install them" >&2
	exit 1
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# wait for another apt-get or dpkg (rather than fail at once on its lock)
lock=(-o DPkg::Lock::Timeout=600)
apt-get "${lock[@]}" update -qq
apt-get "${lock[@]}" install -y -qq --no-install-recommends "${missing[@]}"
