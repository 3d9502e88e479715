#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/bench/python.sh -- the Python binding beside the C client, on one
# master and one node on loopback, each figure beside its baseline measured
# in the same run:
#   (a) 4 KiB put/get ops/s, one client: store_kv_bench (plain)  vs  client-bench small 1
#   (b) 4 MiB put/get: store_kv_bench (zcopy: put_from/get_into, and plain:
#       put(bytes)/get() -> bytes)  vs  client-bench large (mc_put_from / mc_get_into)
#   (c) the longest cached prefix of 256 keys: batch_query_prefix  vs
#       batch_is_exist + the first miss found in Python (prefix_bench.py),
#       with 256, 128, 32, 1 and 0 keys cached, beside the floor of both
#       (one master round trip: is_exist of one key); batch_query_prefix
#       cold (the first query of fresh keys) and warm (the same chain asked
#       again: the keys leased to the client answer from its cache)
# Every figure is the median of RUNS runs (default 3).  Between two runs the
# script waits (at most 60 s) until the master has freed every byte: a
# removed object's blocks stay allocated until its last read lease plus the
# write-grant time have passed (meta_object_hold), and a run started over
# them finds the 2 GiB segment full: its puts then evict its own fresh
# objects (misses, -704, in every later read of them) or fail (-200).
# Prints "python <metric> <value> <unit>" and "python ratio <name> <x>" lines
# (binding / C: 1.00 is the C client's speed; the goal at 4 MiB is >= 0.85).
set -eu
O=${O:-.output}
PYTHON=${PYTHON:-/usr/bin/python3}
cd "$(dirname "$0")/../.."
. tests/bench/bench-lib.sh
[ -f "$O/python/.built" ] || { echo "python: no binding in $O/python (make test-build)"; exit 0; }
tmp=$(mktemp -d)
shm=/dev/shm
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm_node_segments "$shm" "$tmp/n"
	[ "$shm" = "$tmp/shm" ] && umount "$shm" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
# Segment files on a tmpfs with huge pages when we may mount one (as
# cluster.sh): else the first touch of each 4 KiB page of the segment, paid
# by whichever bench writes fresh space first, dominates the 4 MiB figures.
shm=/dev/shm
if [ "$(id -u)" -eq 0 ] && mkdir -p "$tmp/shm" &&
   mount -t tmpfs -o huge=within_size,size=3G tmpfs "$tmp/shm" 2>/dev/null; then
	shm=$tmp/shm
fi
echo "python shm_dir $shm"
free_port() { "$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
mport=$(free_port)
hport=$(free_port)
"$O/bin/mooncake-master" --rpc_address=127.0.0.1 --rpc_port="$mport" --http_port="$hport" --state_dir="$tmp/m" \
	--lease_ttl_ms=2000 --log_level=warning 2>"$tmp/master.log" &
pids+=($!)
sleep 0.3
"$O/bin/mooncake-node" --master=127.0.0.1:"$mport" --data_address=127.0.0.1 --data_port=0 --http_port=0 \
	--segment_size=2G --segments=1 --shm_dir="$shm" --state_dir="$tmp/n" 2>"$tmp/node.log" &
pids+=($!)
for _ in $(seq 1 200); do grep -q mounted "$tmp/node.log" && break; sleep 0.1; done
M=127.0.0.1:$mport
export PYTHONPATH=$PWD/$O/python
RUNS=${RUNS:-3}
# settle: until the master has no byte allocated (removed objects' blocks
# are held until their leases and write grants end), at most 60 s.
allocated() { curl -sf "http://127.0.0.1:$hport/metrics" | awk '$1 == "mooncake_master_allocated_bytes" {print $2}'; }
settle() {
	local a
	for _ in $(seq 1 600); do
		a=$(allocated || true)
		[ "$a" = 0 ] && return 0
		sleep 0.1
	done
	echo "python: the master still holds ${a:-?} bytes after 60 s" >&2
}
# kv ARGS...: store_kv_bench on keys of its own (a put of a key an earlier
# run wrote fails at once, and its failures would count as fast puts); a run
# whose timed phases saw errors prints them and no figure.
kv() {
	local out
	out=$("$PYTHON" tests/bench/python/store_kv_bench.py --master-server "$M" --repeat "$RUNS" \
		--key-prefix "kv$RANDOM$RANDOM" "$@")
	if grep -Eq ' (prepare|warmup|write|read|mixed) .* errors=[1-9]' <<<"$out"; then
		echo "python: store_kv_bench $* had errors:" >&2; echo "$out" >&2; exit 1
	fi
	echo "$out"
}
# field PHASE NAME: the median of NAME= over the lines of PHASE
field() { awk -v p="$1" -v n="$2=" '$3 == p { for (i = 4; i <= NF; i++) if (index($i, n) == 1) print substr($i, length(n) + 1) }' | median; }
# cbench ARGS... METRIC...: client-bench RUNS times, the median of each METRIC
cbench() {
	local out; out=$(for _ in $(seq 1 "$RUNS"); do "$O/tests/bench/client-bench" "$M" "$@"; settle; done)
	echo "$out"
}
pick() { awk -v m="$1" '$2 == m {print $3}' | median; }
ratio() { awk -v a="$2" -v b="$3" -v n="$1" 'BEGIN { if (b > 0) printf "python ratio %s %.2f\n", n, a / b }'; }

# (a) 4 KiB, one client.
c=$(cbench small 1 2)
cput=$(pick put4k_c1 <<<"$c"); cget=$(pick get4k_c1 <<<"$c")
pput=$(kv --scenario write_perf --value-size 4096 --nr-objects 2000 | field write kv/s)
pget=$(kv --scenario read_perf --value-size 4096 --nr-objects 2000 | field read kv/s)
echo "python c_put_4KiB $cput ops/s"; echo "python py_put_4KiB $pput ops/s"
echo "python c_get_4KiB $cget ops/s"; echo "python py_get_4KiB $pget ops/s"
ratio put_4KiB "$pput" "$cput"; ratio get_4KiB "$pget" "$cget"
settle

# (b) 4 MiB.
c=$(cbench large 4194304 64)
cput=$(pick put_4MiB <<<"$c" | awk '{print $1 * 1e9 / 1048576}')
cget=$(pick get_4MiB <<<"$c" | awk '{print $1 * 1e9 / 1048576}')
echo "python c_put_4MiB $cput MiB/s"; echo "python c_get_4MiB $cget MiB/s"
settle
for api in zcopy plain; do
	w=$(kv --scenario write_perf --value-size 4194304 --nr-objects 64 --io-api $api | field write MiB/s)
	settle
	r=$(kv --scenario read_perf --value-size 4194304 --nr-objects 64 --io-api $api | field read MiB/s)
	echo "python py_put_4MiB_$api $w MiB/s"; echo "python py_get_4MiB_$api $r MiB/s"
	ratio "put_4MiB_$api" "$w" "$cput"; ratio "get_4MiB_$api" "$r" "$cget"
	settle
done

# (c) the longest cached prefix.
"$PYTHON" tests/bench/python/prefix_bench.py "$M" | sed 's/^/python /'
