#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/bench/auth.sh -- the cost of the cluster secret (the connection
# handshake, rpc/rpc-admit.h): two clusters on loopback, one without a
# secret and one with, measured alternately in the same run over TCP (no
# shared memory): 4 KiB put/get ops/s at 1 and 16 clients, 64 MiB put/get
# GB/s, and new connections/s.  Both masters run with oplog_sync=false (the
# same for both: fsync latency would drown what is measured here).  Every figure is the median of RUNS runs
# (default 3).  Prints "auth <metric>_<plain|secret> <value> <unit>" and
# "auth cost <metric> <percent>%" (secret vs plain; positive: slower).
set -eu
O=${O:-.output}
RUNS=${RUNS:-3}
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	# our nodes' segment files only (shm_dir is shared)
	sed -n 's|.*segment .* id [0-9a-f]*, [0-9]* bytes, \(/dev/shm/mooncake-[0-9a-f]*\) .*|\1|p' \
		"$tmp"/*/node.log 2>/dev/null | xargs -r rm -f
	rm -rf "$tmp"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
. tests/bench/bench-lib.sh
head -c 32 /dev/urandom | base64 >"$tmp/cluster.secret"

# cluster NAME [--cluster_secret_file=F]: a master and a node; sets M_NAME.
cluster() {
	local name=$1 mport dport
	shift
	mport=$(free_port); dport=$(free_port)
	mkdir -p "$tmp/$name"
	"$O/bin/mooncake-master" --rpc_address=127.0.0.1 --rpc_port="$mport" --http_port=0 \
		--state_dir="$tmp/$name/m" --lease_ttl_ms=2000 --write_grant_ttl_ms=2000 --oplog_sync=false --log_level=warning "$@" \
		2>"$tmp/$name/master.log" &
	pids+=($!)
	sleep 0.2
	"$O/bin/mooncake-node" --master=127.0.0.1:"$mport" --data_address=127.0.0.1 --data_port="$dport" \
		--http_port=0 --segment_size=1G --state_dir="$tmp/$name/n" "$@" \
		2>"$tmp/$name/node.log" &
	pids+=($!)
	wait_log auth "$tmp/$name/node.log" mounted
	wait_fold auth "$tmp/$name/node.log"
	eval "M_$name=127.0.0.1:$mport"
}
cluster plain
cluster secret --cluster_secret_file="$tmp/cluster.secret"

# bench ARGS...: RUNS runs on each cluster, alternating; outputs in $tmp/out.plain / .secret
bench() {
	: >"$tmp/out.plain"; : >"$tmp/out.secret"
	for _ in $(seq 1 "$RUNS"); do
		MC_DISABLE_SHM=1 "$O/tests/bench/client-bench" "$M_plain" "$@" >>"$tmp/out.plain"
		MC_DISABLE_SHM=1 MOONCAKE_CLUSTER_SECRET_FILE=$tmp/cluster.secret \
			"$O/tests/bench/client-bench" "$M_secret" "$@" >>"$tmp/out.secret"
		sleep 2.2	# the reads' leases end, removes free the space
	done
}
# report METRIC UNIT [higher-is-better: 1]
report() {
	local p s
	p=$(awk -v m="$1" '$2 == m {print $3}' "$tmp/out.plain" | median)
	s=$(awk -v m="$1" '$2 == m {print $3}' "$tmp/out.secret" | median)
	echo "auth ${1}_plain $p $2"
	echo "auth ${1}_secret $s $2"
	awk -v n="$1" -v p="$p" -v s="$s" 'BEGIN { if (p > 0) printf "auth cost %s %.1f%%\n", n, (p - s) * 100 / p }'
}

for c in 1 16; do
	bench small "$c" 2
	report "put4k_c$c" ops/s
	report "get4k_c$c" ops/s
done
bench large $((64 << 20)) 6
report put_64MiB GB/s
report get_64MiB GB/s
bench connect 2000 0
report connect conn/s
