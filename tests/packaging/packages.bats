#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# make test-packages (root; minutes, not part of `make test`): the .debs and
# .rpms as a packager and an operator meet them.
#
#   - make deb (lintian clean) builds the packages; the same build is
#     packaged again as VERSION~test1, the "previous build" to upgrade from;
#     make rpm builds the RPMs (rpmlint clean)
#   - in a fresh Debian 12 root (tests/tools/mkroot.sh): apt-get install
#     ./mooncake-*.deb (with the libraries) installs; the daemons run from
#     their installed paths with the installed config and mooncakectl puts
#     and gets; upgrading from the previous build keeps the master's state
#     and the objects; removing keeps config and state, purging leaves the
#     root as it was before the install
#   - the RPMs hold the files the .debs hold, and their programs run
#
# The daemons in the root run in a network namespace of their own (only
# lo): their installed ports (50051, 9003, ...) meet nothing on the host.
# $O/pkg/test holds the packages and the root (deleted at the end unless
# MC_PKGTEST_KEEP=1).
bats_require_minimum_version 1.5.0

OURS="mooncake-master mooncake-node mooncake-trace mooncake-tools mooncake-grafana libmooncake0 libmooncake-dev"

# step NAME LOG CMD...: runs and times CMD; shows the log's tail if it fails
step() {
	local name=$1 log=$2 t0=$SECONDS
	shift 2
	"$@" >"$log" 2>&1 || { echo "# $name failed:" >&3; tail -n 40 "$log" | sed 's/^/# /' >&3; return 1; }
	echo "# $name: $((SECONDS - t0)) s" >&3
}

# build_all: the .debs (VERSION in $W/v2, the same build packaged again as
# VERSION~test1 in $W/v1) and the .rpms ($W/rpm)
build_all() {
	local src=$REPO mk=(O="$O")
	# TEMPORARY, until the skeleton branch is merged: without the daemons'
	# --print-config, build from a copy whose config files come from --help.
	if ! grep -qs 'print-config' daemon/common/*.c; then
		echo "# TEMPORARY: no --print-config in this tree; config files from --help" >&3
		src=$W/src
		mkdir -p "$src"
		git ls-files -z -co --exclude-standard | tar --null -T - --ignore-failed-read -cf - | tar -xf - -C "$src"
		sed -i 's|env -i $< --print-config --config=/dev/null|sh tests/packaging/print-config-fallback.sh $<|' \
			"$src/systemd/systemd.mk"
		mk=(O="$W/src/.output")
	fi
	step "make deb" "$W/deb.log" make -C "$src" -s "${mk[@]}" deb DEB_OUT="$W/v2"
	step "make deb, again as $VERSION~test1" "$W/deb-v1.log" \
		make -C "$src" -s "${mk[@]}" deb DEB_REBUILD=1 DEB_VERSION="$VERSION~test1" DEB_OUT="$W/v1"
	step "make rpm" "$W/rpm.log" make -C "$src" -s "${mk[@]}" rpm RPM_OUT="$W/rpm"
}

setup_file() {
	[ "$(id -u)" -eq 0 ] || skip "needs root (chroot, mounts, network namespaces)"
	cd "$BATS_TEST_DIRNAME/../.."
	export REPO=$PWD O=${MC_BUILD:-$PWD/.output}
	export W=$O/pkg/test MKROOT=$PWD/tests/tools/mkroot.sh
	export ROOT=$W/root VERSION
	VERSION=$(make -s --no-print-directory print-VERSION)
	"$MKROOT" destroy "$ROOT"
	# MC_PKGTEST_REUSE=1: the packages of the last run (working on the tests)
	if [ -n "${MC_PKGTEST_REUSE:-}" ] && [ -d "$W/rpm" ]; then
		echo "# MC_PKGTEST_REUSE: the packages of the last run" >&3
	else
		rm -rf "$W" && mkdir -p "$W"
		build_all
	fi
	step "a fresh Debian 12 root" "$W/mkroot.log" "$MKROOT" create "$ROOT"

	# As a Debian installation has it: the host name resolves (the node
	# advertises hostname:port).
	printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n' "$(hostname)" >"$ROOT/etc/hosts"
	local v
	for v in v1 v2; do
		mkdir -p "$ROOT/tmp/$v"
		cp $(ls "$W/$v"/*.deb | grep -v -- -dbgsym_) "$ROOT/tmp/$v/"
	done
	cp "$BATS_TEST_DIRNAME/in-root.sh" "$ROOT/tmp/in-root.sh"
}

teardown_file() {
	[ -n "${MC_PKGTEST_KEEP:-}" ] || "$MKROOT" destroy "$ROOT"
	rm -rf /sys/fs/bpf/mcpkg-* 2>/dev/null || true
}

setup() {
	cd "$REPO"
}

# inroot CMD...: CMD in the root, as root
inroot() { "$MKROOT" run "$ROOT" "$@"; }

# offline SCRIPT: a shell script (with in-root.sh's functions) run in the
# root, in a network namespace with only lo
offline() {
	unshare --net -- sh -c 'ip link set lo up && exec "$@"' sh \
		"$MKROOT" run "$ROOT" sh -ec ". /tmp/in-root.sh; $1"
}

# files: the root's files and directories with mode and owner, but for the
# API file systems, /run (a tmpfs on a booted system; systemd-analyze writes
# to it here) and what apt and dpkg keep of their own work
files() {
	(cd "$ROOT" && find . -xdev \( -path ./proc -o -path ./sys -o -path ./dev -o -path ./tmp -o -path ./run \
		-o -path ./var/cache/apt -o -path ./var/cache/debconf -o -path ./var/lib/apt \
		-o -path ./var/lib/dpkg -o -path ./var/log \) -prune -o -printf '%p %M %U %G\n' | sort)
}

@test "lintian: no error, no warning; every override with its reason" {
	run lintian --pedantic --info --fail-on error,warning "$W"/v2/*.changes
	printf '%s\n' "$output" >"$W/lintian.txt"
	echo "# lintian: $(grep -c '^[EWIPX]:' "$W/lintian.txt") tags; errors and warnings: $(grep -c '^[EW]:' "$W/lintian.txt")" >&3
	[ "$status" -eq 0 ]
	run ! grep -q '^[EW]:' "$W/lintian.txt"
	# an override line follows a comment (its reason)
	for f in packaging/debian/*.lintian-overrides; do
		run -0 awk '!/^#/ && NF && prev !~ /^#/ { print FILENAME ": " $0 } { prev = $0 }' "$f"
		[ -z "$output" ]
	done
	for f in "$W"/v2/*.deb; do
		echo "# $(basename "$f"): $(($(stat -c %s "$f") / 1024)) KiB" >&3
	done
}

@test "apt-get install ./mooncake-*.deb in a fresh Debian 12 root" {
	run -0 inroot apt-get update -qq
	# what apt pulls in besides ours, installed first: purging ours must
	# then give back this very root
	run -0 inroot sh -c 'cd /tmp/v1 && apt-get install -s ./mooncake-*.deb ./libmooncake*.deb'
	deps=$(sed -n 's/^Inst \([^ ]*\) .*/\1/p' <<<"$output" | grep -vxF -f <(tr ' ' '\n' <<<"$OURS"))
	run -0 inroot env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $deps
	files >"$W/files-before"

	run -0 inroot sh -c 'cd /tmp/v1 && DEBIAN_FRONTEND=noninteractive apt-get install -y ./mooncake-*.deb ./libmooncake*.deb'
	[[ "$output" == *" 7 newly installed, "* ]]
	for p in $OURS; do
		[ "$(inroot dpkg-query -W -f '${Status} ${Version}' "$p")" = "install ok installed $VERSION~test1" ]
	done
	# the user (sysusers.d), the state directories (tmpfiles.d), the conffiles
	run -0 inroot getent passwd mooncake
	[[ "$output" == *":Mooncake Store daemons:/var/lib/mooncake:/usr/sbin/nologin" ]]
	[ "$(inroot stat -c '%U:%G %a' /var/lib/mooncake/master)" = "mooncake:mooncake 750" ]
	[ "$(inroot stat -c '%U:%G %a' /var/lib/mooncake/node)" = "mooncake:mooncake 750" ]
	for d in master node trace; do
		inroot dpkg-query -W -f '${Conffiles}\n' "mooncake-$d" | grep -q "^ /etc/mooncake/$d.conf "
		# enabled for the next boot; not started: systemd is not running here
		[ -L "$ROOT/etc/systemd/system/multi-user.target.wants/mooncake-$d.service" ]
		run -0 inroot systemd-analyze verify --man=no "/lib/systemd/system/mooncake-$d.service"
		[ -z "$output" ]
	done
	for d in master node; do
		run -0 inroot systemd-analyze security --offline=yes --threshold=20 "/lib/systemd/system/mooncake-$d.service"
	done
	[ -x "$ROOT/usr/bin/mooncakectl" ]
	[ -f "$ROOT/usr/share/bash-completion/completions/mooncakectl" ]
	[ -f "$ROOT/usr/share/mooncake/grafana/dashboards/mooncake-master.json" ]
	# mooncakectl dlopens libcurl: the package says so
	inroot dpkg-query -W -f '${Depends}' mooncake-tools | grep -q 'libcurl4'
	inroot dpkg-query -W -f '${Status}' libcurl4 | grep -q 'install ok installed'
}

@test "the installed daemons run with the installed config; mooncakectl puts and gets" {
	run offline '
		start_master
		start_node
		grep -q "mooncake-master: .*state in /var/lib/mooncake/master" /tmp/master.log
		mooncakectl status
		head -c 3000000 /dev/urandom >/tmp/obj
		mooncakectl object put pkg/first /tmp/obj
		mooncakectl object get pkg/first /tmp/back
		cmp /tmp/obj /tmp/back
		trace_check
		stop "$NODE"
		stop "$MASTER"'
	echo "$output" >"$W/run.log"
	[ "$status" -eq 0 ] || { cat "$W/run.log"; false; }
	[ -d "$ROOT/var/lib/mooncake/master/snapshots" ]
	grep -q '^segment ' "$ROOT/var/lib/mooncake/node/node.id"
}

@test "upgrading from the previous build keeps the master's state and the objects" {
	# As the packages do under systemd: the master restarts after the
	# upgrade; a running node is left alone (a stopping node unmounts its
	# segments, and the master would forget their objects).
	run offline '
		start_master
		start_node
		for i in 1 2 3; do
			head -c $((i * 700000)) /dev/urandom >/tmp/up$i
			mooncakectl object put pkg/up$i /tmp/up$i
		done
		mooncakectl object ls | sort >/tmp/ls-before
		grep -q pkg/up3 /tmp/ls-before
		md5sum /etc/mooncake/*.conf >/tmp/conf-before
		cd /tmp/v2
		DEBIAN_FRONTEND=noninteractive apt-get install -y ./mooncake-*.deb ./libmooncake*.deb
		cd /
		md5sum -c /tmp/conf-before
		stop "$MASTER"
		/usr/bin/mooncake-master --version | grep -qx "$(dpkg-query -W -f "\${Version}" mooncake-master)"
		start_master
		grep "recovered 3 objects on 1 segment" /tmp/master.log
		mooncakectl object ls | sort | diff /tmp/ls-before -
		# readable once the running node has remounted its segment (it
		# pings every second and is told to)
		n=0
		until mooncakectl object get pkg/up1 /tmp/back1 2>/tmp/get.err; do
			n=$((n + 1)); [ "$n" -lt 100 ] || { cat /tmp/get.err /tmp/master.log /tmp/node.log; exit 1; }
			sleep 0.1
		done
		kill -0 "$NODE"
		for i in 1 2 3; do
			mooncakectl object get pkg/up$i /tmp/back$i
			cmp /tmp/up$i /tmp/back$i
		done
		stop "$NODE"
		stop "$MASTER"'
	echo "$output" >"$W/upgrade.log"
	[ "$status" -eq 0 ] || { cat "$W/upgrade.log"; false; }
	for p in $OURS; do
		[ "$(inroot dpkg-query -W -f '${Status} ${Version}' "$p")" = "install ok installed $VERSION" ]
	done
}

@test "removing keeps the config and the state; purging leaves the root as before the install" {
	run offline '
		start_master
		start_node
		ls /dev/shm/mooncake-* >/tmp/segments || { ls -la /dev/shm; cat /tmp/node.log; exit 1; }
		stop "$NODE"
		stop "$MASTER"
		DEBIAN_FRONTEND=noninteractive apt-get remove -y '"$OURS"'
		test ! -e /usr/bin/mooncake-master
		test -f /etc/mooncake/master.conf
		test -f /var/lib/mooncake/node/node.id
		test -d /var/lib/mooncake/master/oplog
		while read -r s; do test -f "$s"; done </tmp/segments
		dpkg --purge '"$OURS"'
		test ! -e /etc/mooncake
		test ! -e /var/lib/mooncake
		while read -r s; do test ! -e "$s"; done </tmp/segments
		test -z "$(ls /dev/shm/ | grep ^mooncake-)"
		# the user stays, as Debian system users do
		getent passwd mooncake'
	echo "$output" >"$W/purge.log"
	[ "$status" -eq 0 ] || { cat "$W/purge.log"; false; }
	files >"$W/files-after"
	# The same files, modes and owners; only the user database's backups
	# (written by systemd-sysusers) are new.
	run diff "$W/files-before" "$W/files-after"
	extra=$(grep -v -e '^[0-9,]*[acd][0-9,]*$' -e '^---$' \
		-e '^> \./etc/\(passwd\|group\|shadow\|gshadow\)- ' -e '^> \./etc/\.pwd\.lock ' <<<"$output" || true)
	[ -z "$extra" ] || { echo "$output"; false; }
}

# rpm_files RPM: its files and links (no directories), paths as in the .deb
# of the same content would have them compared (normalize)
rpm_files() {
	rpm -qp --qf '[%{FILEMODES:perms} %{FILENAMES}\n]' "$1" | awk '$1 !~ /^d/ { print $2 }' | normalize
}
deb_files() {
	dpkg-deb -c "$1" | awk '$1 !~ /^d/ { print $6 }' | sed 's|^\./|/|' | normalize
}
# One spelling of a file on both: /usr/lib/systemd (Debian 12: /lib/systemd),
# /usr/lib64 (Debian: the multiarch directory), no compression suffix; and
# none of the packaging formats' own files (docs, licences, overrides,
# build-id links).
normalize() {
	sed -e 's|^/lib/systemd/|/usr/lib/systemd/|' -e 's|^/usr/lib/[a-z0-9_]*-linux-gnu[a-z0-9_]*/|/usr/lib64/|' \
		-e 's|\.gz$||' |
		grep -v -e '^/usr/share/doc/' -e '^/usr/share/licenses/' -e '^/usr/share/lintian/' \
			-e '^/usr/lib/\.build-id' | sort
}

@test "the RPMs: rpmlint clean; each holds the files of its .deb (rpm -qlp, dpkg-deb -c)" {
	run -0 rpmlint -c packaging/rpmlint.toml packaging/mooncake.spec "$W"/rpm/*.rpm
	printf '%s\n' "$output" >"$W/rpmlint.txt"
	[[ "$output" == *" 0 errors, 0 warnings"* ]]
	declare -A rpm_of=([libmooncake0]=mooncake-libs [libmooncake-dev]=mooncake-devel)
	for p in $OURS; do
		r=${rpm_of[$p]:-$p}
		deb=$(ls "$W"/v2/"${p}"_*.deb)
		rpm=$(ls "$W"/rpm/"$r"-"${VERSION}"-*.rpm)
		diff <(deb_files "$deb") <(rpm_files "$rpm") || { echo "$p vs $r differ"; false; }
		echo "# $(basename "$rpm"): $(($(stat -c %s "$rpm") / 1024)) KiB" >&3
	done
	# nothing else was built (but the source and debug packages)
	[ "$(ls "$W"/rpm/*.rpm | grep -vc '\.src\.rpm$')" -eq 7 ]
	# the systemd macros' fallbacks expanded (Debian's rpm has none)
	run -0 rpm -qp --scripts "$W"/rpm/mooncake-master-"$VERSION"-*.x86_64.rpm
	[[ "$output" == *"systemctl --no-reload preset mooncake-master.service"* ]]
	[[ "$output" == *"useradd -r -g mooncake"* ]]
	[[ "$output" == *"systemctl --no-reload disable --now mooncake-master.service"* ]]
	run -0 rpm -qp --requires "$W"/rpm/mooncake-tools-"$VERSION"-*.x86_64.rpm
	[[ "$output" == *"libcurl"* ]]
}

@test "the programs extracted from the RPMs run (rpm2cpio)" {
	x=$BATS_TEST_TMPDIR/rpm
	mkdir -p "$x"
	for r in "$W"/rpm/mooncake-*.x86_64.rpm; do
		(cd "$x" && rpm2cpio "$r" | cpio -idm --quiet)
	done
	for d in master node trace; do
		run -0 "$x/usr/bin/mooncake-$d" --version
		[ "$output" = "$VERSION" ]
		run -0 "$x/usr/bin/mooncake-$d" --help
		[[ "$output" == *"--log_level="* ]]
	done
	run -0 "$x/usr/bin/mooncakectl" --help
	[[ "$output" == *"object"* ]]
	# the library and its headers build and run a client (mooncake-devel)
	printf '#include <stdio.h>\n#include <mooncake/version.h>\nint main(void) { puts(mc_version_string()); return 0; }\n' \
		>"$BATS_TEST_TMPDIR/v.c"
	cc -I"$x/usr/include" -o "$BATS_TEST_TMPDIR/v" "$BATS_TEST_TMPDIR/v.c" -L"$x/usr/lib64" -lmooncake
	run -0 env LD_LIBRARY_PATH="$x/usr/lib64" "$BATS_TEST_TMPDIR/v"
	[ "$output" = "$VERSION" ]
}

@test "libmooncake-dev: mooncake.pc, the headers and both libraries build a client" {
	x=$BATS_TEST_TMPDIR/deb
	for p in libmooncake0 libmooncake-dev; do
		dpkg-deb -x "$(ls "$W"/v2/"${p}"_*.deb)" "$x"
	done
	printf '#include <stdio.h>\n#include <mooncake/version.h>\nint main(void) { puts(mc_version_string()); return 0; }\n' \
		>"$BATS_TEST_TMPDIR/v.c"
	export PKG_CONFIG_SYSROOT_DIR=$x PKG_CONFIG_LIBDIR=$(echo "$x"/usr/lib/*/pkgconfig)
	run -0 pkg-config --modversion mooncake
	[ "$output" = "$VERSION" ]
	cc $(pkg-config --cflags mooncake) -o "$BATS_TEST_TMPDIR/v" "$BATS_TEST_TMPDIR/v.c" $(pkg-config --libs mooncake)
	run -0 env LD_LIBRARY_PATH="$(dirname "$PKG_CONFIG_LIBDIR")" "$BATS_TEST_TMPDIR/v"
	[ "$output" = "$VERSION" ]
	# static: libmooncake.a and its Libs.private
	cc $(pkg-config --cflags mooncake) -o "$BATS_TEST_TMPDIR/vs" "$BATS_TEST_TMPDIR/v.c" \
		-Wl,-Bstatic $(pkg-config --libs-only-l mooncake | sed 's/-lmooncake//') -lmooncake -Wl,-Bdynamic \
		-L"$(dirname "$PKG_CONFIG_LIBDIR")" $(pkg-config --static --libs-only-l mooncake | sed 's/-lmooncake//')
	[ "$(ldd "$BATS_TEST_TMPDIR/vs" | grep -c libmooncake)" -eq 0 ]
	run -0 "$BATS_TEST_TMPDIR/vs"
	[ "$output" = "$VERSION" ]
}

@test "the daemons carry dpkg-buildflags' hardening: PIE, BIND_NOW, fortified calls" {
	x=$BATS_TEST_TMPDIR/deb
	for p in mooncake-master mooncake-node; do
		dpkg-deb -x "$(ls "$W"/v2/"${p}"_*.deb)" "$x"
	done
	for b in "$x"/usr/bin/mooncake-master "$x"/usr/bin/mooncake-node; do
		readelf -d "$b" | grep -q 'FLAGS.*BIND_NOW'
		readelf -d "$b" | grep -q 'FLAGS_1.*PIE'
		readelf -lW "$b" | grep -q GNU_RELRO
		# -D_FORTIFY_SOURCE=2 (CPPFLAGS): the checking variants are called
		nm -D "$b" | grep -q ' U __[a-z_]*_chk' || { echo "$b: no __*_chk call: CPPFLAGS lost"; false; }
	done
}
