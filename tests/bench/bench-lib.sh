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

# wait_fold WHO FILE [SHM_DIR]: off a huge tmpfs, a node folds its segments
# into 2 MiB pages in the background after it is ready (its huge_pages
# option): a second or two of a CPU copying the whole segment, and TLB
# flushes in the node.  Waits for the node's log line saying it is done (at
# most 120 s unless MC_BENCH_START_S), so that what follows is measured
# without it.  SHM_DIR (the node's shm_dir, default /dev/shm) on a tmpfs
# with huge=always or within_size: nothing to wait for (node-segment.c).
wait_fold() {
	case "$(findmnt -no FSTYPE,OPTIONS --target "${3:-/dev/shm}" 2>/dev/null)" in
	tmpfs*huge=always* | tmpfs*huge=within_size*) return 0 ;;
	esac
	MC_BENCH_START_S=${MC_BENCH_START_S:-120} wait_log "$1" "$2" "segment memory .* pages"
}

# median: the median of the numbers on stdin, one a line (of an even
# count, the lower of the middle two)
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

# median_ci: "MEDIAN LO HI N" of the N numbers on stdin, one a line: the
# median and a distribution-free 95% confidence interval of it (order statistics:
# the k-th smallest and k-th largest, k the largest with
# P(Binomial(n, 1/2) < k) <= 2.5%; with fewer than 6 numbers, their range)
median_ci() {
	sort -g | awk '{v[NR]=$1} END {
		n = NR; if (!n) exit
		k = 1; p = 0.5 ^ n; c = p	# c: P(X <= k - 1)
		while (k < n / 2) {
			p = p * (n - k + 1) / k	# P(X = k)
			if (c + p > 0.025) break
			c += p; k++
		}
		if (c > 0.025) k = 1		# n < 6: no interval that narrow
		print v[int((n + 1) / 2)], v[k], v[n + 1 - k], n }'
}

# cpu_ms PID: the CPU time (user + system) PID has used, in ms
cpu_ms() {
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); printf "%d\n", ($12 + $13) * 1000 / hz }' \
		"/proc/$1/stat" 2>/dev/null || echo 0
}

# cpu_of OUT CMD...: runs CMD (its output to /dev/null); OUT gets the CPU
# time (user + system) it used, in ms
cpu_of() {
	local t TIMEFORMAT='%3U %3S'
	t=$({ time "${@:2}" >/dev/null 2>&1; } 2>&1)
	printf -v "$1" '%d' "$(awk -v t="$t" 'BEGIN { split(t, a, " "); print (a[1] + a[2]) * 1000 }')"
}

# rm_node_segments SHM_DIR STATE_DIR...: deletes the segment files of the
# nodes whose state directories are given.  A stopped node keeps them (to
# outlive a restart); a bench's nodes must not leave them in a shared
# /dev/shm, and must not delete anyone else's.
rm_node_segments() {
	local shm=$1
	shift
	awk -v d="$shm" '$1 == "segment" { print d "/mooncake-" $2 }' \
		$(for s in "$@"; do echo "$s/node.id"; done) 2>/dev/null | xargs -r rm -f
}

# redis_fill PORT: sets the 1000 keys of `-r 1000` (each about 20 times), so
# that the Redis GET baselines read keys that exist: a 4 KiB reply, as ours
# (a GET of a key never set answers nil).
redis_fill() {
	redis-benchmark -p "$1" -q -t set -d 4096 -c 16 -n 20000 -r 1000 >/dev/null
}
