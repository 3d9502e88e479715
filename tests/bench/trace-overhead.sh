#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/bench/trace-overhead.sh -- the cost of tracing, in one run: 4 KiB
# puts and gets of client-bench (CONC threads, over TCP and over shared
# memory; `puts` and `gets` modes, one run per operation) with
# mooncake-trace attached to the master, the node and the client, against
# the same with no tracer (the probes are then nops).  Detached and
# attached runs alternate, RUNS of each (default 3); every figure is the
# median.  Goal: at most 3% loss.  Two measures of it:
#   "trace loss NAME P%"      ops/s lost; on 2 vCPUs shared by everything,
#                             this swings by tens of percent from run to run
#                             for puts;
#   "trace cpu_cost NAME P%"  CPU time per operation added, all processes
#                             together (master, node, client, tracer), which
#                             load changes far less.
# Also the BPF program runs per operation while attached
# ("probe_hits_per_op_NAME": each is a uprobe trap).  PUTS, TCP_GETS and
# SHM_GETS: operations per thread of each run; PATHS: which of tcp_put
# tcp_get shm_put shm_get (default all).
# Needs root (uprobes); prints a reason and exits 0 otherwise.
set -eu
O=${O:-.output}
RUNS=${RUNS:-3}
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
	--lease_ttl_ms=1000 --write_grant_ttl_ms=1000 2>"$tmp/master.log" &
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

median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
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
bench() { # bench MODE TRANSPORT OP COUNT [env...]: one client-bench run, one line of figures
	local mode=$1 t=$2 op=$3 count=$4 h0 h1 c0 c1
	shift 4
	h0=$(hits)
	c0=$(cpu_ticks "${pids[@]}" $tpid)
	env "$@" "$O/tests/bench/client-bench" "$M" "${op}s" "$CONC" "$count" >"$tmp/run"
	c1=$(cpu_ticks "${pids[@]}" $tpid)
	h1=$(hits)
	awk -v m="$mode" -v n="${t}_${op}4k_c$CONC" -v ops=$((CONC * count)) -v c=$((c1 - c0)) \
		-v hz="$HZ" -v h=$((h1 - h0)) '$2 ~ /_c[0-9]+$/ && $NF == "ops/s" {
			printf "%s %s %s %.3f %.4f\n", m, n, $(NF - 1), c * 1e6 / hz / ops, h / ops }' \
		"$tmp/run" >>"$tmp/out"
	return 0
}
: >"$tmp/out"
for _ in $(seq 1 "$RUNS"); do
	for mode in detached attached; do
		[ "$mode" = attached ] && attach
		for p in $PATHS; do
			case $p in
			tcp_put) bench "$mode" tcp put "$PUTS" MC_DISABLE_SHM=1 ;;
			tcp_get) bench "$mode" tcp get "$TCP_GETS" MC_DISABLE_SHM=1 ;;
			shm_put) bench "$mode" shm put "$PUTS" ;;
			shm_get) bench "$mode" shm get "$SHM_GETS" ;;
			esac
		done
		if [ "$mode" = attached ]; then
			curl -sf "http://$(sed -n 's/.*ready: http on \([^ ,]*\),.*/\1/p' "$tmp/trace.log")/metrics" \
				>"$tmp/metrics" || true
			detach
		fi
	done
done
pick() { awk -v m="$1" -v n="$2" -v f="$3" '$1 == m && $2 == n { print $f }' "$tmp/out" | median; }
for p in $PATHS; do
	n="${p}4k_c$CONC"
	d=$(pick detached "$n" 3); a=$(pick attached "$n" 3)
	[ -n "$d" ] || continue
	echo "trace ${n}_detached $d ops/s"
	echo "trace ${n}_attached $a ops/s"
	awk -v a="$a" -v d="$d" -v n="$n" \
		'BEGIN { if (d > 0) printf "trace loss %s %.1f%%\n", n, (d - a) * 100 / d }'
	d=$(pick detached "$n" 4); a=$(pick attached "$n" 4)
	echo "trace ${n}_cpu_detached $d us/op"
	echo "trace ${n}_cpu_attached $a us/op"
	awk -v a="$a" -v d="$d" -v n="$n" \
		'BEGIN { if (d > 0) printf "trace cpu_cost %s %.1f%%\n", n, (a - d) * 100 / d }'
	echo "trace probe_hits_per_op_$n $(pick attached "$n" 5) hits"
done
# the tracer saw the traffic (otherwise the figures compare nothing)
seen=$(awk '$1 ~ /^mooncake_trace_transfers_total/ { s += $2 } END { print s + 0 }' "$tmp/metrics")
echo "trace transfers_seen_last_run $seen transfers"
