#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/bench/trace-overhead.sh -- the cost of tracing, in one run: 4 KiB
# put and get ops/s of client-bench (CONC threads, over TCP and over shared
# memory) with mooncake-trace attached to the master, the node and the
# client, against the same with no tracer (the probes are then nops).
# Detached and attached runs alternate, RUNS of each (default 3); every
# figure is the median.  Goal: at most 3% loss.  Prints
# "trace <metric> <value> <unit>" and "trace loss <name> <percent>%" lines,
# and the BPF program runs per put or get while attached
# ("probe_hits_per_op_tcp|shm": each is a uprobe trap).
# Needs root (uprobes); prints a reason and exits 0 otherwise.
set -eu
O=${O:-.output}
RUNS=${RUNS:-3}
CONC=${CONC:-16}
SECS=${SECS:-2}
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
	bpftool prog show -j 2>/dev/null | jq '[.[] | select(.name | test("^(lease_batch|put_batch|evict_batch|transfer_batch|transfer_sum)$")) | .run_cnt // 0] | add // 0' 2>/dev/null || echo 0
}
bench() { # bench MODE TRANSPORT [env...]: one client-bench run, its lines tagged
	local mode=$1 t=$2 h0 h1
	shift 2
	h0=$(hits)
	env "$@" "$O/tests/bench/client-bench" "$M" small "$CONC" "$SECS" | sed "s/^/$mode $t /" >"$tmp/run"
	h1=$(hits)
	cat "$tmp/run" >>"$tmp/out"
	[ "$mode" = attached ] &&
		awk -v h=$((h1 - h0)) -v s="$SECS" -v t="$t" '$4 ~ /^(put|get)4k_c[0-9]+$/ { ops += $5 * s }
			END { if (ops > 0) printf "hits %s %.3f\n", t, h / ops }' "$tmp/run" >>"$tmp/hits"
	return 0
}
: >"$tmp/out"
: >"$tmp/hits"
for _ in $(seq 1 "$RUNS"); do
	for mode in detached attached; do
		[ "$mode" = attached ] && attach
		bench "$mode" tcp MC_DISABLE_SHM=1
		bench "$mode" shm
		if [ "$mode" = attached ]; then
			curl -sf "http://$(sed -n 's/.*ready: http on \([^ ,]*\),.*/\1/p' "$tmp/trace.log")/metrics" \
				>"$tmp/metrics" || true
			detach
		fi
	done
done
pick() { awk -v m="$1" -v t="$2" -v n="$3" '$1 == m && $2 == t && $4 == n {print $5}' "$tmp/out" | median; }
for t in tcp shm; do
	for op in put get; do
		d=$(pick detached "$t" "${op}4k_c$CONC"); a=$(pick attached "$t" "${op}4k_c$CONC")
		echo "trace ${t}_${op}4k_c${CONC}_detached $d ops/s"
		echo "trace ${t}_${op}4k_c${CONC}_attached $a ops/s"
		awk -v a="$a" -v d="$d" -v n="${t}_${op}4k_c$CONC" \
			'BEGIN { if (d > 0) printf "trace loss %s %.1f%%\n", n, (d - a) * 100 / d }'
	done
done
for t in tcp shm; do
	echo "trace probe_hits_per_op_$t $(awk -v t="$t" '$2 == t { print $3 }' "$tmp/hits" | median) hits"
done
# the tracer saw the traffic (otherwise the figures compare nothing)
seen=$(awk '$1 ~ /^mooncake_trace_transfers_total/ { s += $2 } END { print s + 0 }' "$tmp/metrics")
echo "trace transfers_seen_last_run $seen transfers"
