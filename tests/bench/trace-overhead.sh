#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/bench/trace-overhead.sh -- the cost of tracing, in one run: 4 KiB
# puts and gets of client-bench (CONC threads, over TCP and over shared
# memory; `puts` and `gets` modes, one run per operation) with
# mooncake-trace attached to the master, the node and the client, against
# the same with no tracer (the probes are then nops).  Goal: at most 3%
# on every path.  RUNS rounds (default 11), each a detached and an
# attached run of every path, in turn first (so that a drift over the run
# does not favour one side); each figure is the median over the rounds of
# the round's attached run against its detached one, with a
# distribution-free 95% confidence interval (bench-lib.sh median_ci):
#   "trace loss NAME P% (95% CI LO..HI%, N rounds)"
#                             ops/s lost; on 2 vCPUs shared by everything,
#                             single runs swing by 10-20% either way, so
#                             only the interval says whether a figure is
#                             a cost or noise;
#   "trace cpu_cost NAME P% (95% CI ...)"
#                             CPU time per operation added, all processes
#                             together (master, node, client, tracer), which
#                             load changes far less.
# The master runs with oplog_sync=false: tracing costs CPU, not fsync time,
# and a durable put's rate follows the disk's fsync latency, which
# swings more than the goal; the cheaper put makes the tracer's cost the
# larger share of it, so this is the bound.
# Also the BPF program runs per operation while attached
# ("probe_hits_per_op_NAME": each is a uprobe trap).  PUTS, TCP_GETS and
# SHM_GETS: operations per thread of each run; PATHS: which of tcp_put
# tcp_get shm_put shm_get (default all).
# Needs root (uprobes); prints a reason and exits 0 otherwise.
set -eu
O=${O:-.output}
RUNS=${RUNS:-11}
CONC=${CONC:-16}
PUTS=${PUTS:-2000}
TCP_GETS=${TCP_GETS:-5000}
SHM_GETS=${SHM_GETS:-200000}
PATHS=${PATHS:-tcp_put tcp_get shm_put shm_get}
cd "$(dirname "$0")/../.."
if [ "$(id -u)" -ne 0 ] || ! why=$("$O/bin/mooncake-trace" --check=true); then
	echo "trace skipped: ${why:-needs root (CAP_SYS_ADMIN for uprobes)}"
	exit 0
fi
tmp=$(mktemp -d)
pids=()
tpid=
pin=/sys/fs/bpf/mooncake-bench-$$
cleanup() {
	[ -n "$tpid" ] && kill "$tpid" 2>/dev/null
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	for id in $(grep -o '/dev/shm/mooncake-[0-9a-f]*' "$tmp/node.log" 2>/dev/null | sort -u); do rm -f "$id"; done
	rm -rf "$tmp" "$pin"
}
trap cleanup EXIT

. tests/bench/bench-lib.sh

"$O/bin/mooncake-master" --rpc_address=127.0.0.1 --rpc_port=0 --http_port=0 --state_dir="$tmp/m" \
	--oplog_sync=false --lease_ttl_ms=1000 --write_grant_ttl_ms=1000 2>"$tmp/master.log" &
pids+=($!)
wait_log trace "$tmp/master.log" ready
M=$(sed -n 's/.*ready: rpc on \([^ ,]*\),.*/\1/p' "$tmp/master.log")
"$O/bin/mooncake-node" --master="$M" --data_address=127.0.0.1 --data_port=0 --http_port=0 \
	--segment_size=512M --state_dir="$tmp/n" 2>"$tmp/node.log" &
pids+=($!)
wait_log trace "$tmp/node.log" mounted
wait_fold trace "$tmp/node.log"

attach() {
	"$O/bin/mooncake-trace" --http_port=0 --pin_path="$pin" --scan_under="$tmp/" \
		--attach="$O/bin/mooncake-master,$O/bin/mooncake-node,$O/tests/bench/client-bench" \
		--log_level=notice 2>"$tmp/trace.log" &
	tpid=$!
	wait_log trace "$tmp/trace.log" ready
}
detach() {
	kill "$tpid"
	wait "$tpid" 2>/dev/null || true
	tpid=
}

# Probe hits (BPF program runs, kernel.bpf_stats_enabled) per operation:
# the load-independent side of the cost, a uprobe hit being microseconds.
stats_was=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null || echo 0)
sysctl -qw kernel.bpf_stats_enabled=1 2>/dev/null || true
trap 'sysctl -qw kernel.bpf_stats_enabled="$stats_was" 2>/dev/null || true; cleanup' EXIT
hits() {
	bpftool prog show -j 2>/dev/null | jq '[.[] | select(.name | test("^(lease_batch|put_sum|evict_batch|transfer_batch|transfer_sum)$")) | .run_cnt // 0] | add // 0' 2>/dev/null || echo 0
}
cpu_ticks() { # the CPU time (ticks) of the given processes and of this shell's waited-for children
	local t=0 p
	for p in "$@"; do
		[ -r "/proc/$p/stat" ] && t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat")))
	done
	echo $((t + $(awk '{ print $16 + $17 }' /proc/$$/stat)))
}
HZ=$(getconf CLK_TCK)
bench() { # bench MODE ROUND TRANSPORT OP COUNT [env...]: one client-bench run, one line of figures
	local mode=$1 round=$2 t=$3 op=$4 count=$5 h0 h1 c0 c1
	shift 5
	h0=$(hits)
	c0=$(cpu_ticks "${pids[@]}" $tpid)
	env "$@" "$O/tests/bench/client-bench" "$M" "${op}s" "$CONC" "$count" >"$tmp/run"
	c1=$(cpu_ticks "${pids[@]}" $tpid)
	h1=$(hits)
	awk -v m="$mode" -v r="$round" -v n="${t}_${op}4k_c$CONC" -v ops=$((CONC * count)) \
		-v c=$((c1 - c0)) -v hz="$HZ" -v h=$((h1 - h0)) '$2 ~ /_c[0-9]+$/ && $NF == "ops/s" {
			printf "%s %s %s %s %.3f %.4f\n", m, r, n, $(NF - 1), c * 1e6 / hz / ops, h / ops }' \
		"$tmp/run" >>"$tmp/out"
	return 0
}
: >"$tmp/out"
for ((round = 0; round < RUNS; round++)); do
	order="detached attached"
	((round % 2)) && order="attached detached"
	for mode in $order; do
		[ "$mode" = attached ] && attach
		for p in $PATHS; do
			case $p in
			tcp_put) bench "$mode" "$round" tcp put "$PUTS" MC_DISABLE_SHM=1 ;;
			tcp_get) bench "$mode" "$round" tcp get "$TCP_GETS" MC_DISABLE_SHM=1 ;;
			shm_put) bench "$mode" "$round" shm put "$PUTS" ;;
			shm_get) bench "$mode" "$round" shm get "$SHM_GETS" ;;
			esac
		done
		if [ "$mode" = attached ]; then
			curl -sf "http://$(sed -n 's/.*ready: http on \([^ ,]*\),.*/\1/p' "$tmp/trace.log")/metrics" \
				>"$tmp/metrics" || true
			detach
		fi
	done
done
# pick MODE NAME FIELD: the median over the rounds
pick() { awk -v m="$1" -v n="$2" -v f="$3" '$1 == m && $3 == n { print $f }' "$tmp/out" | median; }
# per_round NAME FIELD SIGN: each round's attached figure against its
# detached one, in % (SIGN 1: what the attached run lost; -1: what it added)
per_round() {
	awk -v n="$1" -v f="$2" -v sg="$3" '$3 == n { v[$2, $1] = $f; r[$2] = 1 }
		END { for (i in r) if (v[i, "detached"] > 0 && (i, "attached") in v)
			print sg * (v[i, "detached"] - v[i, "attached"]) * 100 / v[i, "detached"] }' "$tmp/out"
}
# report WHAT NAME FIELD SIGN: "trace WHAT NAME M% (95% CI LO..HI%, N rounds)"
report() {
	per_round "$2" "$3" "$4" | median_ci | awk -v w="$1" -v n="$2" \
		'{ printf "trace %s %s %.1f%% (95%% CI %.1f..%.1f%%, %d rounds)\n", w, n, $1, $2, $3, $4 }'
}
for p in $PATHS; do
	n="${p}4k_c$CONC"
	d=$(pick detached "$n" 4)
	[ -n "$d" ] || continue
	echo "trace ${n}_detached $d ops/s"
	echo "trace ${n}_attached $(pick attached "$n" 4) ops/s"
	report loss "$n" 4 1
	echo "trace ${n}_cpu_detached $(pick detached "$n" 5) us/op"
	echo "trace ${n}_cpu_attached $(pick attached "$n" 5) us/op"
	report cpu_cost "$n" 5 -1
	echo "trace probe_hits_per_op_$n $(pick attached "$n" 6) hits"
done
# the tracer saw the traffic (otherwise the figures compare nothing)
seen=$(awk '$1 ~ /^mooncake_trace_transfers_total/ { s += $2 } END { print s + 0 }' "$tmp/metrics")
echo "trace transfers_seen_last_run $seen transfers"
