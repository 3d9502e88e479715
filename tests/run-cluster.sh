#!/usr/bin/env bash
# tests/run-cluster.sh -- what `make run` starts.
#
# With the daemons built (.output/bin/mooncake-master, mooncake-node) it
# starts a master and one node from the build tree, state under ./run-state,
# prints the endpoints and a demo, and stops both on Ctrl-C.  Until then it
# runs the in-process metadata benchmark (a short one) to show the core.
set -eu
O=${O:-.output}
cd "$(dirname "$0")/.."
state=${MC_RUN_STATE:-$PWD/run-state}
mkdir -p "$state"

if [ ! -x "$O/bin/mooncake-master" ] || [ ! -x "$O/bin/mooncake-node" ]; then
	echo "The daemons are not built yet; running the in-process metadata benchmark instead."
	exec "$O/tests/bench/bench-meta" 200000 3 300
fi

pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	echo "stopped."
}
trap cleanup EXIT INT TERM

# Waits until a daemon logs its ready line; fails with its log if it dies first.
wait_ready() {
	local pid=$1 log=$2 what=$3
	for _ in $(seq 1 100); do
		grep -q 'ready' "$log" 2>/dev/null && return 0
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "make run: $what failed to start; its log ($log):" >&2
			cat "$log" >&2
			exit 1
		fi
		sleep 0.1
	done
	echo "make run: $what is not ready after 10 s; see $log" >&2
	exit 1
}

"$O/bin/mooncake-master" --state_dir="$state/master" --rpc_address=127.0.0.1 \
	> "$state/master.log" 2>&1 &
pids+=($!)
wait_ready "${pids[0]}" "$state/master.log" mooncake-master
"$O/bin/mooncake-node" --master=127.0.0.1:50051 --state_dir="$state/node" \
	--segment_size=1G --segments=1 --data_address=127.0.0.1 > "$state/node.log" 2>&1 &
pids+=($!)
wait_ready "${pids[1]}" "$state/node.log" mooncake-node

cat <<MSG
Mooncake Store is running from the build tree (state in $state):
  master RPC   127.0.0.1:50051       log $state/master.log
  master HTTP  http://127.0.0.1:9003 (REST /api/v1, /metrics, /health)
  node data    127.0.0.1:50061       log $state/node.log (one 1 GiB segment)
  node HTTP    http://127.0.0.1:9004 (/metrics, /health)

Try it in another terminal:
  $O/bin/mooncakectl object put hello /etc/os-release
  $O/bin/mooncakectl object get hello -
  $O/bin/mooncakectl object ls
  $O/bin/mooncakectl status
  $O/bin/mooncakectl segment list
  $O/bin/mooncakectl snapshot create
  curl -s http://127.0.0.1:9003/api/v1/objects | jq .
As root, watch leases, evictions and transfers live:
  LD_LIBRARY_PATH=$O/lib $O/bin/mooncake-trace &   then   $O/bin/mooncakectl trace transfer

Stop the master with Ctrl-C and start it again: every acknowledged object
is still there (snapshots + oplog in $state/master).

Ctrl-C stops both daemons.
MSG
wait
