#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/fresh-root.sh -- `make test-fresh`: the README's two commands on a
# fresh Debian 12 root (minbase plus make and git, tests/tools/mkroot.sh),
# where only the project's own install steps can have put what they need.
#
# Clones the committed HEAD of this checkout into the root (uncommitted
# changes are not part of the check), then, chrooted as root:
#   1. MC_RUN_SELFTEST=1 make run   install the run dependencies, build,
#                                   start a master and a node, put and get an
#                                   object with mooncakectl, stop
#   2. make test-deps test-build    install the test dependencies, build the
#                                   test binaries (the suite itself is `make test`)
# Prints the time of each step.  The root lives in $O/fresh/root and is
# deleted at the end, pass or fail (MC_FRESH_KEEP=1 keeps it to look at).
set -eu
cd "$(dirname "$0")/.."
O=${O:-.output}
jobs=${MC_FRESH_JOBS:-2}
mkroot=$PWD/tests/tools/mkroot.sh

mkdir -p "$O/fresh"
root=$(cd "$O/fresh" && pwd)/root
sha=$(git rev-parse HEAD)
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
	echo "test-fresh: uncommitted changes are not checked; the root gets HEAD ${sha:0:12}"
fi

"$mkroot" destroy "$root"
cleanup() {
	if [ -n "${MC_FRESH_KEEP:-}" ]; then
		echo "test-fresh: the root is kept in $root (tests/tools/mkroot.sh destroy $root)"
	else
		"$mkroot" destroy "$root"
	fi
}
trap cleanup EXIT

# step NAME CMD...: runs and times one step; the first failure ends the check.
step() {
	local name=$1 t0 rc=0
	shift
	t0=$(date +%s)
	echo "== test-fresh: $name"
	"$@" || rc=$?
	printf '== test-fresh: %s: %s in %ds\n' "$name" "$([ $rc -eq 0 ] && echo ok || echo "FAILED ($rc)")" \
		$(($(date +%s) - t0))
	return "$rc"
}

step "minimal Debian 12 root (mmdebstrap minbase + make, git)" "$mkroot" create "$root"
step "git clone (HEAD ${sha:0:12})" \
	git clone --quiet --no-local --no-checkout "$PWD" "$root/root/mooncake"
git -C "$root/root/mooncake" -c advice.detachedHead=false checkout --quiet --detach "$sha"
step "make run (self-test: build, start, put, get, stop)" \
	"$mkroot" run "$root" sh -c "cd /root/mooncake && MC_RUN_SELFTEST=1 make -j$jobs run"
step "make test's dependencies and build" \
	"$mkroot" run "$root" sh -c "cd /root/mooncake && make test-deps && make -j$jobs test-build"
echo "test-fresh: passed"
