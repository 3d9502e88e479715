#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/bench/etcd.sh -- the etcd oplog (oplog=etcd) against the local one
# (oplog=local), both durable (a put answered once its record is committed),
# in the same run: 4 KiB puts/s of a master + node on loopback at 1, 16 and
# 64 clients (client-bench, TCP data path), the records per etcd
# transaction (group commit: /metrics, records / batches), and what the
# same single-member etcd does alone (`etcdctl check perf`, 60 s of its
# large workload: 500 clients, at most 8000 writes/s, so what etcd can do
# here, where the small one's 150 writes/s cap is all it shows;
# CHECK_PERF_LOAD=s|m|l|xl picks another, CHECK_PERF=0 skips it) and for one writer alone (the
# oplog's transaction back to back: bench-etcd-txn), and the failover time under
# load: a leader, a warm standby and a node, 16 clients putting through the
# list of both masters, kill -9 of the leader: the time to the standby
# serving and to the first put through the list after it (lease TTL 2 s;
# median of FAILOVERS rounds, default 5; 0 skips).  Every other figure is
# the median of RUNS runs (default 3).  Puts run with the product's
# defaults ("etcd": gRPC, etcd_pipeline=1, one transaction in flight: the
# main ratio, put4k_cN_etcd_vs_local), and as extra lines with
# etcd_pipeline=3 ("etcd3", 3 transactions in flight) and through etcd's
# JSON gateway instead of its gRPC service (etcd_transport=json,
# "etcdjson": the transport before session 10; pipeline 1), records per
# transaction and transactions per 1000 records for
# each (per client count, and over the whole mode), and what a transaction
# costs on the wire: HTTP requests and bytes per transaction, connections
# opened, curl's time to the answer's first byte of its time per request
# (mooncake_master_oplog_etcd_*), and in CPU: etcd's and the master's CPU
# time per transaction (per fsync for local; /proc/PID/stat).
# Prints "etcd <metric> <value> <unit>" and
# "etcd ratio <name> <x>" lines; the goal is ratio put4k_c64_etcd_vs_local
# >= 0.5.
set -eu
O=${O:-.output}
RUNS=${RUNS:-3}
SECS=${SECS:-2}
cd "$(dirname "$0")/../.."
. tests/bench/bench-lib.sh
command -v etcd >/dev/null || { echo "etcd: etcd-server not installed, skipped"; exit 0; }
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	sed -n 's|.*\(/dev/shm/mooncake-[0-9a-f]*\).*|\1|p' "$tmp"/node-*.log 2>/dev/null | sort -u |
		xargs -r rm -f
	rm -rf "$tmp"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ratio() { awk -v a="$2" -v b="$3" -v n="$1" 'BEGIN { if (a != "" && b > 0) printf "etcd ratio %s %.2f\n", n, a / b }'; }

cp=$(free_port); pp=$(free_port)
E=http://127.0.0.1:$cp
etcd --name b0 --data-dir "$tmp/etcd" --listen-client-urls "$E" --advertise-client-urls "$E" \
	--listen-peer-urls "http://127.0.0.1:$pp" --initial-advertise-peer-urls "http://127.0.0.1:$pp" \
	--initial-cluster "b0=http://127.0.0.1:$pp" --log-level error >"$tmp/etcd.log" 2>&1 &
pids+=($!)
etcd_pid=$!
for _ in $(seq 1 100); do curl -sf "$E/health" 2>/dev/null | grep -q true && break; sleep 0.1; done

# cluster MODE: a master (oplog=MODE) and a node; sets M, H and cpids.
cluster() {
	local mport dport hport
	mport=$(free_port); dport=$(free_port); hport=$(free_port)
	local mode=${1%base} extra= bin=$O/bin
	[ "$mode" = "$1" ] || bin=$BASE_O/bin
	[ "$mode" = etcd3 ] && mode=etcd extra=--etcd_pipeline=3
	[ "$mode" = etcdjson ] && mode=etcd extra=--etcd_transport=json
	"$bin/mooncake-master" --rpc_address=127.0.0.1 --rpc_port="$mport" --http_port="$hport" \
		--state_dir="$tmp/m-$1" --oplog="$mode" --etcd_endpoints="$E" --cluster_id="bench$RANDOM" \
		--lease_ttl_ms=2000 --log_level=warning $extra 2>"$tmp/master-$1.log" &
	cpids=($!)
	sleep 0.3
	"$bin/mooncake-node" --master=127.0.0.1:"$mport" --data_address=127.0.0.1 --data_port="$dport" \
		--http_port=0 --segment_size=1G --segments=1 --state_dir="$tmp/n-$1" \
		2>"$tmp/node-$1.log" &
	cpids+=($!)
	pids+=("${cpids[@]}")
	wait_log etcd "$tmp/node-$1.log" mounted
	wait_fold etcd "$tmp/node-$1.log"
	M=127.0.0.1:$mport
	H=127.0.0.1:$hport
}
stop_cluster() { kill "${cpids[@]}" 2>/dev/null || true; wait "${cpids[@]}" 2>/dev/null || true; }
metric() { curl -s "http://$H/metrics" | awk -v m="$1" '$1 == m {print $2}'; }

declare -A put
: >"$tmp/txn"
modes=${MODES:-local etcd etcd3 etcdjson}	# MODES: a subset, in this order
# BASE_O=DIR: also local and the default etcd mode with DIR's master and
# node ("localbase", "etcdbase": a build to compare with, e.g. main's, in
# the same run; any mode + "base" in MODES)
if [ -n "${BASE_O:-}" ]; then
	for m in localbase etcdbase; do
		[[ " $modes " == *" $m "* ]] || modes="$modes $m"
	done
fi
[ "${PUTS:-1}" = 0 ] && modes=	# PUTS=0: the failover rounds only
for mode in $modes; do
	cluster "$mode"
	for c in ${CLIENTS:-1 16 64}; do
		: >"$tmp/out"
		r0=$(metric mooncake_master_oplog_records_total)
		b0=$(metric mooncake_master_oplog_batches_total)
		q0=$(metric mooncake_master_oplog_etcd_requests_total)
		s0=$(metric mooncake_master_oplog_etcd_sent_bytes_total)
		t0=$(metric mooncake_master_oplog_etcd_seconds_total)
		f0=$(metric mooncake_master_oplog_etcd_first_byte_seconds_total)
		k0=$(metric mooncake_master_oplog_etcd_connects_total)
		ce0=$(cpu_ms "$etcd_pid"); cm0=$(cpu_ms "${cpids[0]}")
		alone=0	# etcd's CPU in the bench-etcd-txn runs below, not the master's batches
		for _ in $(seq 1 "$RUNS"); do
			MC_DISABLE_SHM=1 "$O/tests/bench/client-bench" "$M" small "$c" "$SECS" >>"$tmp/out"
			sleep 2.2   # the leases end, the removed objects' space comes back
			# etcd alone for one writer, run by run beside the lone client
			# (the same etcd, as full as it is then): see the ratios below
			if [ "$mode$c" = etcd1 ] && [ -x "$O/tests/bench/bench-etcd-txn" ]; then
				a0=$(cpu_ms "$etcd_pid")
				"$O/tests/bench/bench-etcd-txn" "$E" "$SECS" >>"$tmp/txn"
				alone=$((alone + $(cpu_ms "$etcd_pid") - a0))
			fi
		done
		ce1=$(($(cpu_ms "$etcd_pid") - alone)); cm1=$(cpu_ms "${cpids[0]}")
		put[$mode$c]=$(awk -v m="put4k_c$c" '$2 == m {print $3}' "$tmp/out" | median)
		echo "etcd ${mode}_put4k_c$c ${put[$mode$c]} ops/s"
		# counts, not wall clock: they hold on a loaded machine too
		awk -v r="$(($(metric mooncake_master_oplog_records_total) - r0))" \
		    -v b="$(($(metric mooncake_master_oplog_batches_total) - b0))" -v m="${mode}_c$c" \
			'BEGIN { if (b > 0) printf "etcd %s_records_per_batch %.1f records\n", m, r / b
				 if (r > 0) printf "etcd %s_batches_per_1000_records %.0f batches\n", m, 1000 * b / r }'
		# what each transaction costs on the wire (etcd modes): HTTP requests,
		# bytes sent, new connections, and curl's time to the answer's first
		# byte / in all, per request (load changes the times, not the counts)
		awk -v b="$(($(metric mooncake_master_oplog_batches_total) - b0))" -v m="${mode}_c$c" \
		    -v q="$(($(metric mooncake_master_oplog_etcd_requests_total) - q0))" \
		    -v s="$(($(metric mooncake_master_oplog_etcd_sent_bytes_total) - s0))" \
		    -v k="$(($(metric mooncake_master_oplog_etcd_connects_total) - k0))" \
		    -v t="$(metric mooncake_master_oplog_etcd_seconds_total)" -v t0="$t0" \
		    -v f="$(metric mooncake_master_oplog_etcd_first_byte_seconds_total)" -v f0="$f0" \
			'BEGIN { if (b > 0 && q > 0) {
				printf "etcd %s_http_requests_per_batch %.2f requests\n", m, q / b
				printf "etcd %s_http_bytes_per_batch %.0f bytes\n", m, s / b
				printf "etcd %s_http_connects %d connections\n", m, k
				printf "etcd %s_http_first_byte_ms %.3f ms (of %.3f ms per request)\n", m,
					1000 * (f - f0) / q, 1000 * (t - t0) / q } }'
		# CPU per transaction (per fsync for local): etcd's (the whole
		# process: gateway, raft, WAL, bbolt) against the master's (all
		# its work, the puts' RPCs included); CPU time, not wall clock
		awk -v b="$(($(metric mooncake_master_oplog_batches_total) - b0))" -v m="${mode}_c$c" \
		    -v e="$((ce1 - ce0))" -v k="$((cm1 - cm0))" -v local="$([ "$mode" = local ] && echo 1)" \
			'BEGIN { if (b > 0) {
				if (!local) printf "etcd %s_etcd_cpu_ms_per_batch %.3f ms (%d ms in %d)\n",
					m, e / b, e, b
				printf "etcd %s_master_cpu_ms_per_batch %.3f ms (%d ms in %d)\n", m, k / b,
					k, b } }'
	done
	recs=$(metric mooncake_master_oplog_records_total)
	bats=$(metric mooncake_master_oplog_batches_total)
	awk -v r="$recs" -v b="$bats" -v m="$mode" \
		'BEGIN { if (b > 0) printf "etcd %s_records_per_batch %.1f records\n", m, r / b
			 if (r > 0) printf "etcd %s_batches_per_record %.3f batches\n", m, b / r }'
	stop_cluster
done
for c in 1 16 64; do
	[ -n "$modes" ] || break
	ratio "put4k_c${c}_etcd_vs_local" "${put[etcd$c]:-}" "${put[local$c]:-}"
	ratio "put4k_c${c}_etcd_pipeline3_vs_local" "${put[etcd3$c]:-}" "${put[local$c]:-}"
	ratio "put4k_c${c}_etcd_json_vs_local" "${put[etcdjson$c]:-}" "${put[local$c]:-}"
	ratio "put4k_c${c}_etcd_grpc_vs_json" "${put[etcd$c]:-}" "${put[etcdjson$c]:-}"
	ratio "put4k_c${c}_etcd_vs_base" "${put[etcd$c]:-}" "${put[etcdbase$c]:-}"
	ratio "put4k_c${c}_local_vs_base" "${put[local$c]:-}" "${put[localbase$c]:-}"
	ratio "put4k_c${c}_base_etcd_vs_local" "${put[etcdbase$c]:-}" "${put[localbase$c]:-}"
done
# etcd alone for one writer: the oplog's transaction back to back over one
# kept gRPC connection (bench-etcd-txn), the ceiling of a lone client's
# puts with oplog=etcd (each waits for one such transaction); against it,
# the lone client's puts, and the local oplog's lone puts
if [ -s "$tmp/txn" ]; then
	txn=$(awk '$2 == "txn_per_s" {print $3}' "$tmp/txn" | median)
	echo "etcd etcd_txn_alone_c1 $txn txn/s (p50 $(awk '$2 == "txn_p50_us" {print $3}' \
		"$tmp/txn" | median) us)"
	ratio put4k_c1_etcd_vs_etcd_txn_alone "${put[etcd1]:-}" "$txn"
	ratio etcd_txn_alone_vs_local_put4k_c1 "$txn" "${put[local1]:-}"
fi
if [ "${CHECK_PERF:-1}" != 0 ] && [ -n "$modes" ]; then
	load=${CHECK_PERF_LOAD:-l}
	out=$(ETCDCTL_API=3 etcdctl --endpoints="$E" check perf --load="$load" 2>&1 || true)
	# "PASS: Throughput is N writes/s" or "FAIL: Throughput too low: N writes/s"
	tput=$(sed -n 's/.*Throughput[^0-9]*\([0-9.]*\) writes\/s.*/\1/p' <<<"$out" | head -n1)
	echo "etcd etcdctl_check_perf_$load ${tput:-?} writes/s"
	[ -n "$tput" ] && ratio "put4k_c64_etcd_vs_etcdctl_check_perf" "${put[etcd64]:-}" "$tput"
fi

# ---- failover under load (median of FAILOVERS rounds) ---------------------------------------
ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }
FAILOVERS=${FAILOVERS:-5}
: >"$tmp/fo-serve"; : >"$tmp/fo-put"; : >"$tmp/fo-replay"
for round in $(seq 1 "$FAILOVERS"); do
	cid=fo$round$RANDOM
	ra=$(free_port); rb=$(free_port); ha=$(free_port); hb=$(free_port); dport=$(free_port)
	for n in a b; do
		rp=$ra hp=$ha
		[ $n = b ] && rp=$rb hp=$hb
		"$O/bin/mooncake-master" --oplog=etcd --etcd_endpoints="$E" --cluster_id="$cid" \
			--etcd_lease_ttl_s=2 --rpc_address=127.0.0.1 --rpc_port="$rp" --http_port="$hp" \
			--state_dir="$tmp/fo-$round-$n" --lease_ttl_ms=2000 --log_level=info \
			2>"$tmp/fo-$round-$n.log" &
		eval "p$n=\$!"
		pids+=($!)
		[ $n = a ] && for _ in $(seq 1 100); do
			grep -q 'ready: rpc on' "$tmp/fo-$round-a.log" && break; sleep 0.05; done
	done
	L=127.0.0.1:$ra,127.0.0.1:$rb
	"$O/bin/mooncake-node" --master="$L" --data_address=127.0.0.1 --data_port="$dport" \
		--http_port=0 --segment_size=1G --segments=1 --state_dir="$tmp/fo-n-$round" \
		2>"$tmp/node-fo-$round.log" &
	pn=$!
	pids+=($pn)
	for _ in $(seq 1 100); do grep -q mounted "$tmp/node-fo-$round.log" && break; sleep 0.1; done
	MC_DISABLE_SHM=1 "$O/tests/bench/client-bench" "$L" small 16 8 >/dev/null 2>&1 &
	pl=$!
	sleep 2
	t0=$(date +%s%N)
	if ! kill -0 "$pa" 2>/dev/null; then
		echo "etcd: failover round $round: the leader did not start:" >&2
		tail -n 5 "$tmp/fo-$round-a.log" >&2
		kill "$pl" "$pn" "$pb" 2>/dev/null || true
		continue
	fi
	{ kill -KILL "$pa"; wait "$pa"; } 2>/dev/null || true
	serve=
	for _ in $(seq 1 400); do
		grep -q 'ready: rpc on' "$tmp/fo-$round-b.log" && { serve=$(ms_since "$t0"); break; }
		sleep 0.025
	done
	put=
	head -c 4096 /dev/urandom >"$tmp/fo-obj"
	for i in $(seq 1 400); do
		MC_DISABLE_SHM=1 "$O/bin/mooncakectl" --rpc "$L" object put "fo-$round-$i" "$tmp/fo-obj" \
			>/dev/null 2>&1 && { put=$(ms_since "$t0"); break; }
		sleep 0.025
	done
	echo "${serve:-99999}" >>"$tmp/fo-serve"
	echo "${put:-99999}" >>"$tmp/fo-put"
	sed -n 's/.*replayed the [0-9]* records left in \([0-9]*\) ms.*/\1/p' "$tmp/fo-$round-b.log" \
		>>"$tmp/fo-replay"
	kill "$pl" "$pn" "$pb" 2>/dev/null || true
	wait "$pl" "$pn" "$pb" "$pa" 2>/dev/null || true
done
if [ "$FAILOVERS" -gt 0 ]; then
	fs=$(median <"$tmp/fo-serve"); fp=$(median <"$tmp/fo-put")
	echo "etcd failover_kill9_to_serving_ms $fs ms (median of $FAILOVERS: $(tr '\n' ' ' <"$tmp/fo-serve"))"
	echo "etcd failover_kill9_to_put_ms $fp ms (median of $FAILOVERS: $(tr '\n' ' ' <"$tmp/fo-put"))"
	[ -s "$tmp/fo-replay" ] && echo "etcd failover_promotion_replay_ms $(median <"$tmp/fo-replay") ms"
	# the baseline: the lease TTL, which a takeover must wait out anyway
	ratio failover_serving_vs_lease_ttl "$fs" 2000
	ratio failover_put_vs_lease_ttl "$fp" 2000
fi
