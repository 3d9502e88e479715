#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Persistence: the master restarts (kill -9) from its snapshot + oplog with
# every acknowledged object readable once its node remounts; the node
# daemon restarts from its /dev/shm files; corrupt state files are
# detected and the master starts from the last consistent state.  The kill -9
# rounds under load are tagged slow (`make test-slow`).
bats_require_minimum_version 1.5.0

load helpers

setup() {
	mc_init
	[ -x "$NODE" ] && [ -x "$CTL" ] || skip "mooncake-node / mooncakectl not built"
}

teardown() {
	stop_all
}

@test "master kill -9: acknowledged objects readable after the restart, removed ones gone" {
	start_master --rpc_port="$(free_port)" --snapshot_interval_s=0
	start_node n1
	for i in 1 2 3 4; do run -0 put_random "k$i" 100K; done
	run -0 ctl object rm k2 --force
	restart_master --snapshot_interval_s=0
	grep -q 'replayed' "$MC_DIR/master.log"
	wait_readable k1
	get_compare k3
	get_compare k4
	run ctl object get k2 "$MC_DIR/k2.out"
	[ "$status" -ne 0 ]
}

# wait_remounted: every segment of the node is readable again (the node
# pings once a second and remounts when the master does not know it).
# On failure, says why (the last put's error and the cluster's state).
wait_remounted() {
	local i=0 t0=$SECONDS
	# 30 s at most: a probe gives up after 2 s (a node that is not yet gone
	# may hold its connections open without answering)
	while [ $((SECONDS - t0)) -lt 30 ]; do
		i=$((i + 1))
		ctl --timeout 2000 object put "probe-$1-$i" "$MC_DIR/probe" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "# no put succeeded 10 s after the restart (round $1):"
	ctl object put "probe-$1-last" "$MC_DIR/probe" 2>&1 | sed 's/^/#   /'
	ctl status 2>&1 | sed 's/^/#   /'
	return 1
}

# round_start, round_end R, round_report N: the slowest kill-and-recover
# round, printed (a slow machine shows here before it times out).
round_start() { ROUND_T0=$(date +%s%N); }
round_end() {
	local ms=$((($(date +%s%N) - ROUND_T0) / 1000000))
	[ "$ms" -le "${ROUND_MAX_MS:-0}" ] || { ROUND_MAX_MS=$ms ROUND_MAX=$1; }
	ROUND_SUM_MS=$((${ROUND_SUM_MS:-0} + ms))
}
round_report() {
	echo "# $1 rounds: mean $((ROUND_SUM_MS / $1)) ms, slowest $ROUND_MAX_MS ms (round $ROUND_MAX)" >&3
}

# bats test_tags=slow
# MC_RESTART_ROUNDS rounds: 20, make test-slow 100
@test "master kill -9 at random moments under put/remove load, many rounds: nothing acknowledged lost" {
	local rounds=${MC_RESTART_ROUNDS:-20} r
	head -c 1000 /dev/urandom >"$MC_DIR/probe"
	start_master --rpc_port="$(free_port)" --snapshot_interval_s=1 --snapshot_retain=2 \
		--eviction_high_watermark=1
	start_node n1 --segment_size=256M
	start_load
	for r in $(seq 1 "$rounds"); do
		sleep "0.$((RANDOM % 8 + 2))"
		round_start
		restart_master --snapshot_interval_s=1 --snapshot_retain=2 --eviction_high_watermark=1
		wait_remounted "$r"
		round_end "$r"
	done
	round_report "$rounds"
	sleep 0.5
	stop_load
	restart_master --snapshot_interval_s=1 --snapshot_retain=2 --eviction_high_watermark=1
	wait_remounted end
	verify_load
	# snapshots were taken and old oplog files compacted away
	[ "$(ls "$MC_DIR/master/snapshots" | grep -c '\.db$')" -le 2 ]
}

# bats test_tags=slow
# MC_NODE_RESTART_ROUNDS rounds: 5, make test-slow 25
@test "node kill -9 under load, several rounds: its /dev/shm segments are remounted, objects stay readable" {
	local rounds=${MC_NODE_RESTART_ROUNDS:-5} r
	head -c 1000 /dev/urandom >"$MC_DIR/probe"
	start_master --eviction_high_watermark=1
	start_node n1 --segment_size=256M
	local seg
	seg=$(awk '$1 == "segment" { print $2 }' "$MC_DIR/node-n1/node.id")
	start_load
	for r in $(seq 1 "$rounds"); do
		sleep "0.$((RANDOM % 8 + 2))"
		round_start
		kill_node n1 KILL
		start_node n1 --segment_size=256M
		grep -q "$seg" "$MC_DIR/node-n1.log"   # the same segment, not a new one
		wait_remounted "$r"
		round_end "$r"
	done
	round_report "$rounds"
	sleep 0.5
	stop_load
	verify_load
}

@test "corrupt snapshot and oplog tail: detected, logged, the master starts from the last consistent state" {
	head -c 1000 /dev/urandom >"$MC_DIR/probe"
	start_master --rpc_port="$(free_port)" --snapshot_interval_s=0
	start_node n1
	for i in 1 2 3; do run -0 put_random "s$i" 10K; done
	curl -sf -X POST "http://$(sed -n 's/.*http on \([^,]*\),.*/\1/p' "$MC_DIR/master.log" | tail -n1)/api/v1/snapshots" >/dev/null ||
		true   # the REST route may not be merged yet: the snapshot thread covers it below
	restart_master --snapshot_interval_s=1
	wait_readable s1
	local i
	for i in $(seq 1 40); do
		ls "$MC_DIR"/master/snapshots/*.db >/dev/null 2>&1 && break
		sleep 0.1
	done
	for i in 4 5 6; do run -0 put_random "s$i" 10K; done
	sleep 1.5   # a second snapshot with s4..s6
	for i in 7 8; do run -0 put_random "s$i" 10K; done
	kill -KILL "$MASTER_PID"
	_mc_reap "$MASTER_PID"
	# flip a bit of an object record (the key s4) in the newest snapshot,
	# add a torn record to the oplog
	local snap log
	snap=$(ls "$MC_DIR"/master/snapshots/*.db | tail -n1)
	python3 -c "
import sys
b = bytearray(open(sys.argv[1], 'rb').read())
i = b.find(b'\x02\x00s4')
assert i >= 0
b[i + 3] ^= 0x01
open(sys.argv[1], 'wb').write(b)" "$snap"
	log=$(ls "$MC_DIR"/master/oplog/*.log | tail -n1)
	printf 'torn\x00\x01' >>"$log"
	local port=${MASTER_ADDR##*:}
	start_master --rpc_port="$port" --snapshot_interval_s=0
	grep -q 'oplog: cut a torn tail' "$MC_DIR/master.log"
	wait_readable s1
	for i in 2 3 4 5 6 7 8; do get_compare "s$i"; done
	grep -q "snapshot $snap is not usable" "$MC_DIR/master.log"
	[ -e "$snap.bad" ]
}

@test "a restored segment whose node never remounts is unmounted client_ttl_ms after the restart; its keys can be put again" {
	start_master --rpc_port="$(free_port)" --snapshot_interval_s=0 --client_ttl_ms=3000
	start_node n1
	for i in 1 2 3 4; do run -0 put_random "g$i" 10K; done	# all on n1
	start_node n2
	kill_node n1 KILL
	restart_master --snapshot_interval_s=0 --client_ttl_ms=3000
	grep -q 'recovered 4 objects on 2 segments' "$MC_DIR/master.log"
	# until the sweep the keys are stuck: not puttable, not readable (a
	# client that does not wait: REPLICA_IS_NOT_READY at once)
	run put_random g1 10K
	echo "# before the sweep: $output" >&3
	[ "$status" -ne 0 ]
	MC_FAILOVER_WAIT_MS=-1 run ctl object get g1 "$MC_DIR/x.out"
	[[ "$output" == *REPLICA_IS_NOT_READY* ]]
	# a get waits for n1's remount (failover_wait_ms): n1 never comes, n2
	# remounts; client_ttl_ms after the start n1's segment goes, and the
	# waiting get hears OBJECT_NOT_FOUND
	run ctl object get g2 "$MC_DIR/x.out"
	echo "# a get waiting through the sweep: $output" >&3
	[[ "$output" == *OBJECT_NOT_FOUND* ]]
	local i
	for i in $(seq 1 80); do
		grep -q 'unmounted 1 restored segment' "$MC_DIR/master.log" && break
		sleep 0.1
	done
	grep -q 'unmounted 1 restored segment' "$MC_DIR/master.log"
	local k
	for k in g1 g2 g3 g4; do
		run ctl object get "$k" "$MC_DIR/x.out"
		[[ "$output" == *OBJECT_NOT_FOUND* ]]
		run -0 put_random "$k" 10K
		get_compare "$k"
	done
}
