#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/run.sh GROUP... -- run test groups under prove (TAP) and print the
# time of each.  cmocka binaries speak TAP with CMOCKA_MESSAGE_OUTPUT=TAP;
# bats with --tap.  Groups:
#   unit         the cmocka unit tests ($O/tests/unit/test-*)
#   integration  the bats tests that are neither slow nor root (`make test`)
#   slow         bats tests tagged slow: long fault runs (`make test-slow`)
#   root         bats tests tagged root: BPF, network namespaces (`make test-root`)
#   all          every group above
# A bats test joins a group with a tag line above it (`# bats test_tags=slow`)
# or, for a whole file, `# bats file_tags=root`.
# The closing line is "N passed, N failed" over every group run.
set -u
O=${O:-.output}
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- all

pass=0 fail=0
run_prove() {
	local out rc
	out=$(mktemp)
	prove "$@" 2>&1 | tee "$out"
	rc=${PIPESTATUS[0]}
	# "Files=3, Tests=57, ..." -> count test points; failures from "Failed N/M"
	local tests failed
	tests=$(sed -n 's/^Files=[0-9]*, Tests=\([0-9]*\),.*/\1/p' "$out" | tail -n1)
	failed=$(grep -Eo 'Failed [0-9]+/[0-9]+ subtests' "$out" | awk '{split($2,a,"/"); s+=a[1]} END {print s+0}')
	tests=${tests:-0}
	if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
	pass=$((pass + tests - failed))
	fail=$((fail + failed))
	rm -f "$out"
	return "$rc"
}

# bats_group TAGS: the integration files under prove, only tests matching
# bats' --filter-tags TAGS.
bats_group() {
	local files=(tests/integration/*.bats)
	export MC_BUILD="$PWD/$O"
	run_prove --timer --comments --failures --exec "bats --tap --filter-tags $1" "${files[@]}"
}

run_group() {
	case "$1" in
	unit)
		export CMOCKA_MESSAGE_OUTPUT=TAP
		# test-client starts the daemons of the same build
		export MC_BUILD="${MC_BUILD:-$PWD/$O}"
		local bins=() b
		for b in "$O"/tests/unit/test-*; do
			case "$b" in *.o|*.d) continue ;; esac
			[ -x "$b" ] && bins+=("$b")
		done
		[ ${#bins[@]} -gt 0 ] || { echo "no unit tests in $O/tests/unit (make test-build)"; fail=$((fail + 1)); return 1; }
		run_prove --timer --comments --failures --exec '' "${bins[@]}"
		;;
	integration) MC_TEST_NO_ROOT=1 bats_group '!slow,!root' ;;
	# a hung fault run fails after 20 min instead of eating CI's budget
	slow) MC_TEST_NO_ROOT=1 BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-1200} bats_group slow ;;
	root)
		if [ "$(id -u)" -ne 0 ]; then
			echo "the root group needs root (BPF, network namespaces): run it as root" >&2
			fail=$((fail + 1))
			return 1
		fi
		bats_group root
		;;
	*) echo "usage: $0 [unit|integration|slow|root|all]..." >&2; fail=$((fail + 1)); return 2 ;;
	esac
}

groups=()
for g in "$@"; do
	if [ "$g" = all ]; then groups+=(unit integration slow root); else groups+=("$g"); fi
done

rc=0 times=()
for g in "${groups[@]}"; do
	t0=$(date +%s)
	p0=$pass f0=$fail
	run_group "$g" || rc=1
	times+=("$(printf '%-12s %4ds  %d passed, %d failed' "$g" $(($(date +%s) - t0)) \
		$((pass - p0)) $((fail - f0)))")
done
echo "group times:"
printf '  %s\n' "${times[@]}"
echo "$pass passed, $fail failed"
exit $rc
