#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/run-cluster.sh -- what `make run` starts.
#
# Starts a master and one node from the build tree ($O/bin), state under
# ./run-state, prints the endpoints and a demo, and stops both on Ctrl-C.
#
# MC_RUN_SELFTEST=1 (`MC_RUN_SELFTEST=1 make run`, what `make test-fresh`
# runs): the same daemons, non-interactive, on ports the kernel picks and a
# state directory of its own under $O; puts an object with mooncakectl, gets
# it back, compares the bytes, stops both daemons (each must exit 0) and
# exits 0 only if all of that worked.
set -eu
O=${O:-.output}
cd "$(dirname "$0")/.."
selftest=${MC_RUN_SELFTEST:-}

for b in mooncake-master mooncake-node mooncakectl; do
	if [ ! -x "$O/bin/$b" ]; then
		echo "make run: $O/bin/$b is not built; run 'make run' (it builds first)" >&2
		exit 1
	fi
done

if [ -n "$selftest" ]; then
	mkdir -p "$O"
	state=$(mktemp -d "$O/run-selftest.XXXXXX")
	state=$(cd "$state" && pwd)
	mport=0 mhttp=0 nport=0 nhttp=0 segsize=64M
else
	state=${MC_RUN_STATE:-$PWD/run-state}
	mport=50051 mhttp=9003 nport=50061 nhttp=9004 segsize=1G
fi
mkdir -p "$state"

pids=()
names=()
failed=
# Stops the daemons (SIGTERM, newest first) and reaps them; in the
# self-test a daemon that does not exit 0 fails the run.
stop_daemons() {
	local i rc
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		kill -TERM "${pids[i]}" 2>/dev/null || true
		rc=0
		wait "${pids[i]}" || rc=$?
		if [ -n "$selftest" ] && [ "$rc" -ne 0 ]; then
			echo "make run: mooncake-${names[i]} exited with status $rc; its log:" >&2
			cat "$state/${names[i]}.log" >&2
			failed=1
		fi
	done
	pids=()
}
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	stop_daemons
	if [ -n "$selftest" ]; then
		# the node keeps its segments in /dev/shm to outlive a crash: ours go
		awk '$1 == "segment" { print "/dev/shm/mooncake-" $2 }' "$state/node/node.id" \
			2>/dev/null | xargs -r rm -f
		[ -z "$failed" ] && [ "$rc" -eq 0 ] && rm -rf "$state"
		[ -n "$failed" ] && rc=1
		[ "$rc" -eq 0 ] && echo "make run: self-test passed" || echo "make run: self-test FAILED (state in $state)" >&2
	else
		echo "stopped."
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# wait_ready PID NAME SED_EXPR: prints the first capture of SED_EXPR in the
# daemon's log once it says ready; fails with its log if it dies first.
wait_ready() {
	local pid=$1 name=$2 expr=$3 log=$state/$2.log v
	for _ in $(seq 1 300); do
		v=$(sed -n "s/$expr/\1/p" "$log" 2>/dev/null | head -n1)
		[ -n "$v" ] && { echo "$v"; return 0; }
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "make run: mooncake-$name failed to start; its log ($log):" >&2
			cat "$log" >&2
			return 1
		fi
		sleep 0.1
	done
	echo "make run: mooncake-$name is not ready after 30 s; see $log" >&2
	return 1
}

"$O/bin/mooncake-master" --state_dir="$state/master" --rpc_address=127.0.0.1 --rpc_port=$mport \
	--http_port=$mhttp </dev/null >"$state/master.log" 2>&1 &
pids+=($!) names+=(master)
maddr=$(wait_ready "${pids[0]}" master '.*ready: rpc on \([^ ,]*\), http on [^ ,]*,.*')
mhttp=$(sed -n 's/.*ready: rpc on [^ ,]*, http on \([^ ,]*\),.*/\1/p' "$state/master.log" | head -n1)

"$O/bin/mooncake-node" --master="$maddr" --state_dir="$state/node" --segment_size=$segsize \
	--segments=1 --data_address=127.0.0.1 --data_port=$nport --http_port=$nhttp \
	</dev/null >"$state/node.log" 2>&1 &
pids+=($!) names+=(node)
naddr=$(wait_ready "${pids[1]}" node '.*ready: data on \([^ ,]*\),.*')
nhttp=$(sed -n 's/.*ready: .*, http on \([^ ,]*\),.*/\1/p' "$state/node.log" | head -n1)
# a put needs the node's segment mounted on the master
for _ in $(seq 1 300); do
	grep -q 'mounted' "$state/node.log" && break
	sleep 0.1
done

if [ -n "$selftest" ]; then
	ctl=("$O/bin/mooncakectl" --rpc "$maddr" --master "http://$mhttp")
	head -c 1234567 /dev/urandom >"$state/object.in"
	"${ctl[@]}" object put selftest "$state/object.in"
	"${ctl[@]}" object get selftest "$state/object.out"
	cmp "$state/object.in" "$state/object.out"
	echo "make run: put and got back $(stat -c %s "$state/object.in") bytes (master $maddr, node $naddr)"
	exit 0
fi

cat <<MSG
Mooncake Store is running from the build tree (state in $state):
  master RPC   $maddr       log $state/master.log
  master HTTP  http://$mhttp (REST /api/v1, /metrics, /health)
  node data    $naddr       log $state/node.log (one 1 GiB segment)
  node HTTP    http://$nhttp (/metrics, /health)

Try it in another terminal:
  $O/bin/mooncakectl object put hello /etc/os-release
  $O/bin/mooncakectl object get hello -
  $O/bin/mooncakectl object ls
  $O/bin/mooncakectl status
  $O/bin/mooncakectl segment list
  $O/bin/mooncakectl snapshot create
  curl -s http://$mhttp/api/v1/objects | jq .
As root, watch leases, evictions and transfers live:
  LD_LIBRARY_PATH=$O/lib $O/bin/mooncake-trace &   then   $O/bin/mooncakectl trace transfer

Stop the master with Ctrl-C and start it again: every acknowledged object
is still there (snapshots + oplog in $state/master).

Ctrl-C stops both daemons.
MSG
wait
