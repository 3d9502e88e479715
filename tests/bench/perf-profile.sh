#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/bench/perf-profile.sh -- where the time goes in the 4 KiB cases that
# miss their goals (issue 14): one `perf record -e cpu-clock -g` profile of
# the whole machine per case while client-bench runs against a master and a
# node started as durable.sh starts them, reported per process (master,
# node, client: the share of the samples of the three) and as the top
# symbols of each.  cpu-clock because this machine has no hardware counters.
#   cases: durable-put (oplog_sync=true, puts over TCP), fast-put
#   (oplog_sync=false, puts over TCP), shm-get (oplog_sync=false, gets over
#   the shared segment)
#   CONC=64 clients, SECS=4 seconds recorded (client-bench runs 4 x SECS), TOP=12 symbols per process,
#   CASES="durable-put fast-put shm-get", OUT=DIR keeps perf.data files.
# Prints "perf-profile <case> <process> <share>%" lines, then the symbols.
# Needs perf (linux-perf, packaging/deps.sh group bench) and the right to
# profile the whole machine (root, or kernel.perf_event_paranoid <= 0).
set -eu
O=${O:-.output}
CONC=${CONC:-64}
SECS=${SECS:-4}
TOP=${TOP:-12}
CASES=${CASES:-durable-put fast-put shm-get}
cd "$(dirname "$0")/../.."
. tests/bench/bench-lib.sh
tmp=$(mktemp -d)
OUT=${OUT:-$tmp}
mkdir -p "$OUT"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm_node_segments /dev/shm "$tmp"/n-*
	rm -rf "$tmp"
}
trap cleanup EXIT
command -v perf >/dev/null || { echo "perf-profile: perf not installed" >&2; exit 1; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# cluster SYNC: as durable.sh's; sets M and cpids.
cluster() {
	local mport dport
	mport=$(free_port); dport=$(free_port)
	"$O/bin/mooncake-master" --rpc_address=127.0.0.1 --rpc_port="$mport" --http_port=0 \
		--state_dir="$tmp/m-$1" --oplog_sync="$1" --lease_ttl_ms=2000 --write_grant_ttl_ms=2000 \
		--log_level=warning 2>"$tmp/master.log" &
	cpids=($!)
	sleep 0.2
	"$O/bin/mooncake-node" --master=127.0.0.1:"$mport" --data_address=127.0.0.1 --data_port="$dport" \
		--http_port=0 --segment_size=1G --segments=1 --state_dir="$tmp/n-$1" 2>"$tmp/node.log" &
	cpids+=($!)
	pids+=("${cpids[@]}")
	wait_log perf-profile "$tmp/node.log" ready
	wait_fold perf-profile "$tmp/node.log"
	M=127.0.0.1:$mport
}
stop_cluster() {
	kill "${cpids[@]}" 2>/dev/null || true
	wait "${cpids[@]}" 2>/dev/null || true
	# the segment files first: their names are in the nodes' state
	rm_node_segments /dev/shm "$tmp"/n-*
	rm -rf "$tmp"/m-* "$tmp"/n-* 2>/dev/null || true
}

# profile CASE SYNC SHM PHASE: client-bench small CONC SECS; perf records
# (FREQ samples a second per CPU, DWARF call chains: the builds keep no frame
# pointers)
# the whole machine during the put phase (PHASE 0) or the get phase (1)
# but its first half second and last half second.
profile() {
	local c=$1 data=$OUT/perf-$1.data
	cluster "$2"
	local env=(MC_DISABLE_SHM=1)
	[ "$3" = shm ] && env=()
	env "${env[@]}" "$O/tests/bench/client-bench" "$M" small "$CONC" $((4 * SECS)) >"$tmp/bench-$c.out" &
	local bp=$!
	pids+=("$bp")
	# client-bench's phases take half its SECONDS each: 2 SECS of puts, then
	# 2 SECS of gets; perf records SECS from half a second into one (its own
	# start may take a while on a loaded machine)
	sleep "$(awk -v s="$SECS" -v g="$4" 'BEGIN {print g ? 2 * s + 0.5 : 0.5}')"
	perf record -q -a -e cpu-clock -F "${FREQ:-1000}" --call-graph dwarf,8192 -o "$data" -- sleep "$SECS" \
		>/dev/null 2>&1
	local mpid=${cpids[0]} npid=${cpids[1]}
	wait "$bp" || true
	stop_cluster
	grep -E "(put4k|get4k)_c$CONC " "$tmp/bench-$c.out" | sed "s/^/perf-profile $c /" || true
	# by process id (others' processes of the same name may run meanwhile):
	# the share of the three processes' samples
	local -A name=([$mpid]=master [$npid]=node [$bp]=client)
	perf script -i "$data" -F pid 2>/dev/null | awk '{n[$1]++} END {for (p in n) print p, n[p]}' >"$tmp/n"
	awk -v c="$c" -v m="$mpid" -v d="$npid" -v b="$bp" '
		{n[$1] = $2} END {t = n[m] + n[d] + n[b]
			split("master node client", w); split(m " " d " " b, q)
			for (i = 1; i <= 3; i++)
				printf "perf-profile %s %s %.1f%% (%d samples)\n", c, w[i], t ? 100 * n[q[i]] / t : 0, n[q[i]]}' "$tmp/n"
	for p in "$mpid" "$npid" "$bp"; do
		perf report -i "$data" --no-children --pid "$p" --percentage relative --sort sym \
			--stdio 2>/dev/null | awk '/^ *[0-9.]+%/' >"$tmp/syms"
		awk -v c="$c" -v p="${name[$p]}" '{sub("%", "", $1); if ($2 == "[k]") k += $1; else u += $1}
			END {printf "perf-profile %s %s kernel %.1f%% user %.1f%%\n", c, p, k, u}' "$tmp/syms"
		echo "perf-profile $c ${name[$p]} top symbols (self, share of the process's samples):"
		head -n "$TOP" "$tmp/syms" | sed 's/^/    /'
		# inclusive (with callees), user symbols: which calls the kernel time
		# above belongs to (a paravirtual guest books much of it at irq enable)
		echo "perf-profile $c ${name[$p]} top user symbols with their callees:"
		perf report -i "$data" --children --pid "$p" --percentage relative --sort sym \
			--stdio -g none 2>/dev/null | awk '/^ *[0-9.]+% +[0-9.]+% +\[\.\]/' |
			grep -v -E '\[\.\] (0x[0-9a-f]+|start_thread|clone3?|__clone|_start|__libc_start_main.*|main)$' |
			head -n "$TOP" | sed 's/^/    /'
	done
}

for c in $CASES; do
	case $c in
	durable-put) profile "$c" true tcp 0 ;;
	fast-put) profile "$c" false tcp 0 ;;
	shm-get) profile "$c" false shm 1 ;;
	*) echo "perf-profile: unknown case $c" >&2; exit 1 ;;
	esac
done
