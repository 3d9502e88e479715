#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/bench/durable.sh -- 4 KiB put/get of a real cluster on loopback
# against Redis configured both ways, every figure from the same run:
#   durable:  our default (oplog_sync=true: a put is answered once its
#             record is fsynced)  vs  Redis appendonly yes + appendfsync always
#   fast:     oplog_sync=false    vs  Redis with its defaults
# at 1, 16 and 64 clients (TCP data path); at 16 and 64 clients Redis is
# driven two ways, redis-benchmark's one thread and its threads of one
# connection each (rb below: the shape of client-bench); p50/p99/p999 at 16 clients
# (Redis prints p50 and p99 only), and the CPU time of a put at 16 clients,
# per process, against a SET's (cpu_per_put below).  The gets run with the client's
# descriptor cache (the default): each thread cycles over a hot set of the
# keys it put (client-bench small: 64, 32 at 64 clients), read again within
# their lease: one round trip each; the same
# gets through a client without the cache follow in the same run
# (uncached_get4k, MC_BENCH_UNCACHED=1 of client-bench), and in fast mode the
# gets again over a hot set of 64 keys per client (MC_BENCH_HOT=64).  Every figure is the median of RUNS runs
# (default 5).  Prints "durable <metric> <value> <unit>" and
# "durable ratio <name> <x>" lines; in durable mode also the records each
# fsync made durable (group commit: at most the number of clients).
#   MB=DIR: the daemons to measure (default $O/bin), e.g. an older build.
# Which put path ran is printed per mode and client count ("durable path_..."):
# puts ended by their node (DATA_WRITE_END: two round trips, the node's ends
# batched into BATCH_NODE_PUT_END calls) and puts the client ended (PUT_END:
# three round trips; by default a client's lone put, as at 1 client).
# MC_PUT_NODE_END=0 in the environment measures the 3-trip put, =1 the
# node-ended one wherever it applies (client-put.c).
set -eu
O=${O:-.output}
RUNS=${RUNS:-5}
MB=${MB:-$O/bin}
SECS=${SECS:-2}
cd "$(dirname "$0")/../.."
. tests/bench/bench-lib.sh
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm_node_segments /dev/shm "$tmp"/n-*
	rm -rf "$tmp"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ratio() { awk -v a="$2" -v b="$3" -v n="$1" 'BEGIN { if (b > 0) printf "durable ratio %s %.2f\n", n, a / b }'; }

# cluster SYNC: a master (oplog_sync=SYNC) and a node; sets M and cpids.
cluster() {
	local mport dport hport
	mport=$(free_port); dport=$(free_port); hport=$(free_port)
	"$MB/mooncake-master" --rpc_address=127.0.0.1 --rpc_port="$mport" --http_port="$hport" \
		--state_dir="$tmp/m-$1" --oplog_sync="$1" --lease_ttl_ms=2000 --write_grant_ttl_ms=2000 --log_level=warning \
		2>"$tmp/master-$1.log" &
	cpids=($!)
	sleep 0.2
	"$MB/mooncake-node" --master=127.0.0.1:"$mport" --data_address=127.0.0.1 --data_port="$dport" \
		--http_port=0 --segment_size=1G --segments=1 --state_dir="$tmp/n-$1" \
		2>"$tmp/node-$1.log" &
	cpids+=($!)
	pids+=("${cpids[@]}")
	wait_log durable "$tmp/node-$1.log" ready
	wait_fold durable "$tmp/node-$1.log"
	M=127.0.0.1:$mport
	H=127.0.0.1:$hport
}
# oplog_counts: "records batches" of the master's oplog so far (its /metrics)
oplog_counts() {
	curl -sf "http://$H/metrics" | awk '$1 == "mooncake_master_oplog_records_total" {r = $2}
		$1 == "mooncake_master_oplog_batches_total" {b = $2} END {print r + 0, b + 0}'
}
# path_counts: "client PUT_ENDs, BATCH_NODE_PUT_END calls, puts the node ended" so far
path_counts() {
	local nh
	nh=$(sed -n 's/.*ready: data on .*, http on \([^ ,]*\),.*/\1/p' "$tmp/node-$mode.log" | tail -n1)
	{ curl -sf "http://$H/metrics"; curl -sf "http://$nh/metrics"; } | awk '
		$1 == "mooncake_master_rpc_requests_total{op=\"put_end\"}" {p = $2}
		$1 == "mooncake_master_rpc_requests_total{op=\"batch_node_put_end\"}" {b = $2}
		$1 == "mooncake_node_put_ends_total" {e = $2}
		$1 == "mooncake_node_put_relays_total" {r = $2}
		END {print p + 0, b + 0, e + 0, r + 0}'
}
# cpu_per_put: the CPU time (user + system) of a 4 KiB put at 16 clients,
# per process (client-bench puts: 16 threads x 1000 new keys; the master
# and the node from /proc), against a Redis SET's (redis-benchmark and
# redis-server), 16000 each, the median of RUNS runs: CPU time, which load
# changes far less than throughput.  On 2 vCPUs, where every process of a
# run shares the CPUs, its inverse bounds the ops/s.  The SETs also from
# redis-benchmark's threads (rb "threads"): what its driver costs then.
cpu_per_put() {
	local n=16000 i m0 n0 r0 cc rc tc
	: >"$tmp/cpu"
	for ((i = 0; i < RUNS; i++)); do
		m0=$(cpu_ms "${cpids[0]}"); n0=$(cpu_ms "${cpids[1]}")
		cpu_of cc env MC_DISABLE_SHM=1 "$O/tests/bench/client-bench" "$M" puts 16 1000
		echo -n "$cc $(($(cpu_ms "${cpids[0]}") - m0)) $(($(cpu_ms "${cpids[1]}") - n0)) " >>"$tmp/cpu"
		r0=$(cpu_ms "$rpid")
		cpu_of rc redis-benchmark -p "$rport" -q -t set -d 4096 -c 16 -n "$n" -r 100000
		echo -n "$rc $(($(cpu_ms "$rpid") - r0)) " >>"$tmp/cpu"
		r0=$(cpu_ms "$rpid")
		cpu_of tc redis-benchmark -p "$rport" -q -t set -d 4096 -c 16 --threads 16 -n "$n" -r 100000
		echo "$tc $(($(cpu_ms "$rpid") - r0))" >>"$tmp/cpu"
		sleep 4.2
	done
	for col in 1 2 3 4 5 6 7; do
		awk -v c=$col -v n=$n '{ print $c * 1000 / n }' "$tmp/cpu" | median
	done | paste -sd' ' | awk -v m="$name" '{
		us = $1 + $2 + $3; rs = $4 + $5
		printf "durable %s_put4k_c16_cpu_us client %g master %g node %g total %g us\n", m, $1, $2, $3, us
		printf "durable redis_%s_set4k_c16_cpu_us benchmark %g server %g total %g us\n", m, $4, $5, rs
		printf "durable redis_%s_set4k_c16_threads_cpu_us benchmark %g server %g total %g us\n", m, $6, $7, $6 + $7
		if (us > 0) printf "durable ratio %s_put4k_c16_cpu_redis_vs_ours %.2f\n", m, rs / us }'
}
stop_cluster() { kill "${cpids[@]}" 2>/dev/null || true; wait "${cpids[@]}" 2>/dev/null || true; }

# redis NAME ARGS...: a redis-server with ARGS; sets R (its port) and RPID.
redis() {
	local name=$1; shift
	R=$(free_port)
	mkdir -p "$tmp/redis-$name"
	redis-server --port "$R" --bind 127.0.0.1 --dir "$tmp/redis-$name" --daemonize no "$@" \
		>"$tmp/redis-$name.log" 2>&1 &
	RPID=$!
	pids+=($!)
	for _ in $(seq 1 50); do redis-cli -p "$R" ping >/dev/null 2>&1 && break; sleep 0.1; done
}
# rb PORT TEST CONC COLUMN [threads]: the median of COLUMN (2 rps, 5 p50,
# 7 p99 in ms) of RUNS runs (GETs read the 1000 keys redis_fill set: all
# exist, a 4 KiB reply as ours).  redis-benchmark drives its CONC
# connections from one thread, one event loop: a reply that comes while it
# runs costs it no wake-up.  With "threads", from CONC threads of one
# connection each (--threads CONC): each thread sleeps until its reply
# comes, as each of client-bench's CONC threads does in a blocking call.
rb() {
	for _ in $(seq 1 "$RUNS"); do
		redis-benchmark -p "$1" -q --csv -t "$2" -d 4096 -c "$3" -n $((5000 + $3 * 500)) \
			${5:+--threads "$3"} -r "$([ "$2" = get ] && echo 1000 || echo 100000)" |
			awk -F'"' -v c=$(( $4 * 2 )) 'NR == 2 {print $c}'
	done | median
}

redis always --appendonly yes --appendfsync always --save ''
raw=$R rawpid=$RPID
redis_fill "$raw"
redis defaults
rdef=$R rdefpid=$RPID
redis_fill "$rdef"

for mode in true false; do
	cluster "$mode"
	name=$([ "$mode" = true ] && echo durable || echo fast)
	rport=$([ "$mode" = true ] && echo "$raw" || echo "$rdef")
	rpid=$([ "$mode" = true ] && echo "$rawpid" || echo "$rdefpid")
	for c in 1 16 64; do
		: > "$tmp/out"
		read -r r0 b0 < <(oplog_counts)
		read -r pe0 nb0 ne0 nr0 < <(path_counts)
		for _ in $(seq 1 "$RUNS"); do
			MC_BENCH_UNCACHED=1 MC_DISABLE_SHM=1 "$O/tests/bench/client-bench" "$M" small "$c" "$SECS" >> "$tmp/out"
			sleep 4.2   # the leases, then the write grants, end: the removed objects' space comes back
		done
		read -r r1 b1 < <(oplog_counts)
		read -r pe1 nb1 ne1 nr1 < <(path_counts)
		awk -v p=$((pe1 - pe0)) -v b=$((nb1 - nb0)) -v e=$((ne1 - ne0)) -v r=$((nr1 - nr0)) \
			-v n="${name}_c$c" 'BEGIN { printf "durable path_%s relayed %d, node_ended %d puts in %d BATCH_NODE_PUT_END (%.2f per call), client_ended %d puts\n", n, r, e, b, b ? (e + r) / b : 0, p }'
		# group commit: the records (PutEnd, Remove) one fsync made durable
		[ "$mode" = true ] && awk -v r=$((r1 - r0)) -v b=$((b1 - b0)) -v c="$c" \
			'BEGIN { if (b > 0) printf "durable records_per_fsync_c%s %.2f records (at most %s)\n", c, r / b, c }'
		pick() { awk -v m="$1" '$2 == m {print $3}' "$tmp/out" | median; }
		put=$(pick "put4k_c$c"); get=$(pick "get4k_c$c"); uget=$(pick "get4k_uncached_c$c")
		rset=$(rb "$rport" set "$c" 2); rget=$(rb "$rport" get "$c" 2)
		echo "durable ${name}_put4k_c$c $put ops/s"
		echo "durable ${name}_get4k_c$c $get ops/s"
		echo "durable ${name}_uncached_get4k_c$c $uget ops/s"
		echo "durable redis_${name}_set4k_c$c $rset ops/s"
		echo "durable redis_${name}_get4k_c$c $rget ops/s"
		ratio "${name}_put4k_c${c}_vs_redis_set" "$put" "$rset"
		ratio "${name}_get4k_c${c}_vs_redis_get" "$get" "$rget"
		ratio "${name}_uncached_get4k_c${c}_vs_redis_get" "$uget" "$rget"
		if [ "$c" != 1 ]; then   # Redis driven as client-bench drives us (rb)
			rsett=$(rb "$rport" set "$c" 2 threads); rgett=$(rb "$rport" get "$c" 2 threads)
			echo "durable redis_${name}_set4k_c${c}_threads $rsett ops/s"
			echo "durable redis_${name}_get4k_c${c}_threads $rgett ops/s"
			ratio "${name}_put4k_c${c}_vs_redis_set_threads" "$put" "$rsett"
			ratio "${name}_get4k_c${c}_vs_redis_get_threads" "$get" "$rgett"
		fi
		if [ "$mode" = false ]; then   # a hot set, through the descriptor cache (client.h)
			: > "$tmp/hot"   # its own file: the latencies below are the runs' above
			for _ in $(seq 1 "$RUNS"); do
				MC_BENCH_HOT=64 MC_DISABLE_SHM=1 "$O/tests/bench/client-bench" "$M" small "$c" "$SECS" >> "$tmp/hot"
				sleep 4.2
			done
			cget=$(awk -v m="get4k_c$c" '$2 == m {print $3}' "$tmp/hot" | median)
			echo "durable cached_hot_get4k_c$c $cget ops/s"
			ratio "cached_hot_get4k_c${c}_vs_redis_get" "$cget" "$rget"
		fi
		if [ "$c" = 16 ]; then
			for op in put4k get4k get4k_uncached; do
				for p in p50 p99 p999; do
					echo "durable ${name}_${op}_c16_$p $(pick "${op}_c16_$p") us"
				done
			done
			for op in set get; do
				echo "durable redis_${name}_${op}4k_c16_p50 $(awk -v v="$(rb "$rport" "$op" 16 5)" 'BEGIN {print v * 1000}') us"
				echo "durable redis_${name}_${op}4k_c16_p99 $(awk -v v="$(rb "$rport" "$op" 16 7)" 'BEGIN {print v * 1000}') us"
			done
			cpu_per_put
		fi
	done
	stop_cluster
done
