#!/usr/bin/env bash
# tests/run.sh unit|integration|all -- run the test suites under prove (TAP).
# cmocka binaries speak TAP with CMOCKA_MESSAGE_OUTPUT=TAP; bats with --tap.
# The closing line is "N passed, N failed" over every test file.
set -u
O=${O:-.output}
what=${1:-all}
cd "$(dirname "$0")/.."

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

rc=0
if [ "$what" = unit ] || [ "$what" = all ]; then
	export CMOCKA_MESSAGE_OUTPUT=TAP
	bins=()
	for b in "$O"/tests/unit/test-*; do
		case "$b" in *.o|*.d) continue ;; esac
		[ -x "$b" ] && bins+=("$b")
	done
	run_prove --timer --exec '' "${bins[@]}" || rc=1
fi
if [ "$what" = integration ] || [ "$what" = all ]; then
	shopt -s nullglob
	files=(tests/integration/*.bats)
	if [ ${#files[@]} -gt 0 ]; then
		export MC_BUILD="$PWD/$O"
		run_prove --timer --exec 'bats --tap' "${files[@]}" || rc=1
	fi
fi
echo "$pass passed, $fail failed"
exit $rc
