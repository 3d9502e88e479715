#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/bench/put-trips.sh -- what one 4 KiB put costs: the relayed put
# (path relay, DATA_PUT: one round trip for the client, the node's starts
# and ends batched to the master), the node-ended put (path node,
# MC_PUT_RELAY=0; DATA_WRITE_END: two round trips for the client, the
# node's ends batched to the master) and the 3-trip put (path client,
# MC_PUT_NODE_END=0 too: PUT_START, DATA_WRITE, PUT_END), each on a fresh
# cluster (durable: oplog_sync=true,
# unless SYNC=false) over TCP: CONC client threads put COUNT values each (client-bench puts),
# and per put
#   - the requests each server answered (its rpc_requests_total metrics,
#     heartbeats left out): the round trips;
#   - the system calls of the client, the master and the node (strace -c -f,
#     the daemons attached while the client runs);
#   - with CALLGRIND=1, instructions per put (callgrind) of the client (one
#     thread: the difference of a run of 2 x N puts and one of N, over N)
#     and of the master and the node (both run under callgrind; counters
#     zeroed before N puts of one thread and dumped after, over N).
# Then a hot 4 KiB get (descriptors cached: one round trip to the node),
# path "hotget": the same counts per get, each the difference of a run of
# 2 x COUNT gets per thread and one of COUNT (client-bench gets: the puts
# of the hot set, its first gets and the removes cancel out).
# Counts, not wall-clock figures: they hold on a loaded machine.  Prints
# "put-trips <path> <metric> <value>" lines.
#   O=DIR (default .output), CONC (16), COUNT (200), N (500),
#   SYNC (true: the master's oplog_sync; false: Redis-defaults mode),
#   GETS (1: the hot-get counts too; 0: puts only),
#   COUNTER (strace: strace -c -f; perf: perf stat of the syscall
#   tracepoints, which slows the processes far less, so that batching
#   stays closer to an unobserved run, and adds futex calls and context
#   switches per operation).
set -eu
O=${O:-.output}
CONC=${CONC:-16}
COUNT=${COUNT:-200}
N=${N:-500}
SYNC=${SYNC:-true}
GETS=${GETS:-1}
COUNTER=${COUNTER:-strace}
cd "$(dirname "$0")/../.."
. tests/bench/bench-lib.sh
for t in "$COUNTER" curl; do command -v "$t" >/dev/null || { echo "put-trips: $t missing" >&2; exit 1; }; done
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# cluster NAME: a durable master and a node; sets M, MH, NH, MPID, NPID.
# With VG set, both run under it (a command prefix).
cluster() {
	local mport hport
	mport=$(free_port); hport=$(free_port)
	$VG "$O/bin/mooncake-master" --rpc_address=127.0.0.1 --rpc_port="$mport" --http_port="$hport" \
		--state_dir="$tmp/m-$1" --oplog_sync="$SYNC" --log_level=warning 2>"$tmp/master-$1.log" &
	MPID=$!
	pids+=($MPID)
	sleep 0.2
	$VG "$O/bin/mooncake-node" --master=127.0.0.1:"$mport" --data_address=127.0.0.1 --data_port=0 \
		--http_address=127.0.0.1 --http_port=0 --segment_size=256M --state_dir="$tmp/n-$1" \
		--shm_dir="$tmp" 2>"$tmp/node-$1.log" &
	NPID=$!
	pids+=($NPID)
	wait_log put-trips "$tmp/node-$1.log" mounted
	wait_fold put-trips "$tmp/node-$1.log" "$tmp"
	M=127.0.0.1:$mport
	MH=127.0.0.1:$hport
	NH=$(sed -n 's/.*ready: data on .*, http on \([^ ,]*\),.*/\1/p' "$tmp/node-$1.log" | tail -n1)
}
stop_cluster() { kill "$MPID" "$NPID" 2>/dev/null || true; wait "$MPID" "$NPID" 2>/dev/null || true; }
# requests URL: the requests a server answered, by op (no ping / hello)
requests() {
	curl -sf "http://$1/metrics" | awk '/^mooncake_(master_rpc|node_data)_requests_total\{op="/ &&
		!/op="(ping|hello)"/ { n += $2 } END { print n + 0 }'
}
# calls TAG WHO [futex|cs]: the system calls (or futex calls, or context
# switches) of WHO (client, master, node) in count_run TAG
calls() {
	local f="$tmp/$1-$2.count"
	if [ "$COUNTER" = perf ]; then
		awk -F, -v k="${3:-all}" '
			$3 == "raw_syscalls:sys_enter" && k == "all" ||
			$3 == "syscalls:sys_enter_futex" && k == "futex" ||
			$3 == "context-switches" && k == "cs" { print $1 + 0 }' "$f"
	else	# strace -c: the calls column of the total or of futex; no switches
		awk -v k="${3:-all}" '$NF == (k == "all" ? "total" : k) {
			print (k == "all" ? $(NF - 2) : $4) }' "$f"
	fi
}
# count_run TAG ARGS...: client-bench ARGS (environment: $penv) under COUNTER, the master and the
# node attached meanwhile; TAG-{client,master,node}.count
count_run() {
	local tag=$1 sm sn ev=raw_syscalls:sys_enter,syscalls:sys_enter_futex,context-switches
	shift
	local c=(strace -c -f -o) cm=(strace -c -f -o) cn=(strace -c -f -o)
	if [ "$COUNTER" = perf ]; then
		c=(perf stat -x, -e "$ev" -o)
		cm=(perf stat -x, -e "$ev" -o)
		cn=(perf stat -x, -e "$ev" -o)
	fi
	"${cm[@]}" "$tmp/$tag-master.count" -p "$MPID" 2>/dev/null &
	sm=$!
	"${cn[@]}" "$tmp/$tag-node.count" -p "$NPID" 2>/dev/null &
	sn=$!
	sleep 1
	env $penv MC_DISABLE_SHM=1 "${c[@]}" "$tmp/$tag-client.count" \
		"$O/tests/bench/client-bench" "$M" "$@" >/dev/null
	kill -INT "$sm" "$sn"
	wait "$sm" "$sn" 2>/dev/null || true
}

VG=
puts=$((CONC * COUNT))
# path_env PATH: the client's environment for that path
path_env() {
	case $1 in
	relay) echo MC_PUT_RELAY=1 MC_PUT_NODE_END=1 ;;
	node) echo MC_PUT_RELAY=0 MC_PUT_NODE_END=1 ;;
	*) echo MC_PUT_RELAY=0 MC_PUT_NODE_END=0 ;;
	esac
}
for path in relay node client; do
	penv=$(path_env "$path")
	cluster "$path"
	m0=$(requests "$MH"); n0=$(requests "$NH")
	count_run "$path" puts "$CONC" "$COUNT"
	m1=$(requests "$MH"); n1=$(requests "$NH")
	ends=$(curl -sf "http://$NH/metrics" | awk '$1 == "mooncake_node_put_ends_total" { print $2 }')
	batches=$(curl -sf "http://$NH/metrics" | awk '$1 == "mooncake_node_put_end_batches_total" { print $2 }')
	relays=$(curl -sf "http://$NH/metrics" | awk '$1 == "mooncake_node_put_relays_total" { print $2 }')
	starts=$(curl -sf "http://$NH/metrics" | awk '$1 == "mooncake_node_put_relay_start_batches_total" { print $2 }')
	awk -v p="$path" -v n="$puts" -v m=$((m1 - m0)) -v d=$((n1 - n0)) -v e="${ends:-0}" \
		-v b="$(( ${batches:-0} + ${starts:-0} ))" -v c="$(calls "$path" client)" \
		-v r="${relays:-0}" -v s="${starts:-0}" \
		-v sm="$(calls "$path" master)" -v sn="$(calls "$path" node)" 'BEGIN {
		printf "put-trips %s puts %d\n", p, n
		printf "put-trips %s client_round_trips_per_put %.2f\n", p, (m - b + d) / n
		printf "put-trips %s master_requests_per_put %.3f\n", p, m / n
		printf "put-trips %s node_requests_per_put %.2f\n", p, d / n
		printf "put-trips %s node_ended_puts %d, relayed %d in %d BATCH_NODE_PUT_START; %d BATCH_NODE_PUT_END\n", p, e, r, s, b - s
		printf "put-trips %s client_syscalls_per_put %.1f\n", p, c / n
		printf "put-trips %s master_syscalls_per_put %.1f\n", p, sm / n
		printf "put-trips %s node_syscalls_per_put %.1f\n", p, sn / n
		printf "put-trips %s all_syscalls_per_put %.1f\n", p, (c + sm + sn) / n }'
	for who in client master node; do
		for k in futex cs; do
			v=$(calls "$path" "$who" "$k")
			[ -n "$v" ] && awk -v p="$path" -v w="$who" -v k="$k" -v v="$v" -v n="$puts" \
				'BEGIN { printf "put-trips %s %s_%s_per_put %.2f\n", p, w, k, v / n }'
		done
	done
	if [ "${CALLGRIND:-0}" = 1 ]; then
		for k in 1 2; do
			env $penv MC_DISABLE_SHM=1 valgrind --tool=callgrind \
				--callgrind-out-file="$tmp/cg-$path-$k" "$O/tests/bench/client-bench" "$M" \
				puts 1 $((N * k)) >/dev/null 2>"$tmp/cg-$path-$k.log"
		done
		i1=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$tmp/cg-$path-1.log")
		i2=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$tmp/cg-$path-2.log")
		awk -v p="$path" -v a="$i1" -v b="$i2" -v n="$N" \
			'BEGIN { printf "put-trips %s client_instructions_per_put %.0f\n", p, (b - a) / n }'
	fi
	stop_cluster
done

penv=
if [ "$GETS" = 1 ]; then
	cluster hotget
	MC_DISABLE_SHM=1 "$O/tests/bench/client-bench" "$M" gets 1 10 >/dev/null   # warm up
	count_run g1 gets "$CONC" "$COUNT"
	count_run g2 gets "$CONC" $((COUNT * 2))
	for who in client master node; do
		for k in all futex cs; do
			a=$(calls g1 "$who" "$k"); b=$(calls g2 "$who" "$k")
			[ -n "$a" ] && [ -n "$b" ] && awk -v w="$who" -v k="$k" -v a="$a" -v b="$b" \
				-v n=$((CONC * COUNT)) 'BEGIN { printf "put-trips hotget %s_%s_per_get %.2f\n",
				w, k == "all" ? "syscalls" : k, (b - a) / n }'
		done
	done
	if [ "${CALLGRIND:-0}" = 1 ]; then
		for k in 1 2; do
			MC_DISABLE_SHM=1 valgrind --tool=callgrind --callgrind-out-file="$tmp/cg-get-$k" \
				"$O/tests/bench/client-bench" "$M" gets 1 $((N * k)) >/dev/null 2>"$tmp/cg-get-$k.log"
		done
		i1=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$tmp/cg-get-1.log")
		i2=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$tmp/cg-get-2.log")
		awk -v a="$i1" -v b="$i2" -v n="$N" \
			'BEGIN { printf "put-trips hotget client_instructions_per_get %.0f\n", (b - a) / n }'
	fi
	stop_cluster
fi

# collected FILE: the instructions of a callgrind dump
collected() { awk '/^(summary|totals):/ { print $2; exit }' "$1"; }
if [ "${CALLGRIND:-0}" = 1 ]; then
	for path in relay node client; do
		penv=$(path_env "$path")
		VG="valgrind --tool=callgrind --callgrind-out-file=$tmp/cgd-$path-%p"
		cluster "cg-$path"
		# warm up (connections, first allocations), then count N puts
		env $penv MC_DISABLE_SHM=1 "$O/tests/bench/client-bench" "$M" puts 1 20 >/dev/null
		callgrind_control -z "$MPID" >/dev/null 2>&1
		callgrind_control -z "$NPID" >/dev/null 2>&1
		env $penv MC_DISABLE_SHM=1 "$O/tests/bench/client-bench" "$M" puts 1 "$N" >/dev/null
		callgrind_control -d "$MPID" >/dev/null 2>&1
		callgrind_control -d "$NPID" >/dev/null 2>&1
		for who in master node; do
			pid=$([ "$who" = master ] && echo "$MPID" || echo "$NPID")
			f=$(ls -t "$tmp"/cgd-"$path"-"$pid".* 2>/dev/null | head -n1)
			awk -v p="$path" -v w="$who" -v i="$(collected "$f")" -v n="$N" \
				'BEGIN { printf "put-trips %s %s_instructions_per_put %.0f\n", p, w, i / n }'
		done
		stop_cluster
	done
fi
