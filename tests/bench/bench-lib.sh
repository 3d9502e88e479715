# SPDX-License-Identifier: Apache-2.0
# tests/bench/bench-lib.sh -- sourced by the bench scripts.
#
# wait_log WHO FILE PATTERN: waits until FILE (a daemon's log) holds
# PATTERN, at most MC_BENCH_START_S seconds (60: a daemon mapping a large
# segment on a loaded machine takes a while), else prints the log and
# exits 1 naming WHO (the script).
wait_log() {
	local i n=$(( ${MC_BENCH_START_S:-60} * 10 ))
	for ((i = 0; i < n; i++)); do
		grep -q "$3" "$2" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "$1: daemon not ready after ${MC_BENCH_START_S:-60} s, see $2" >&2
	cat "$2" >&2
	exit 1
}
