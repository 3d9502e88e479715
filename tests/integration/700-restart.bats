#!/usr/bin/env bats
# Persistence: the master restarts (kill -9) from its snapshot + oplog with
# every acknowledged object readable once its node remounts; the node
# daemon restarts from its /dev/shm files; corrupt state files are
# detected and the master starts from the last consistent state.
bats_require_minimum_version 1.5.0

load helpers

setup() {
	mc_init
	[ -x "$NODE" ] && [ -x "$CTL" ] || skip "mooncake-node / mooncakectl not built"
}

teardown() {
	stop_all
}

# restart_master [opts]: kill -9 the master and start it again on the same port.
restart_master() {
	local port=${MASTER_ADDR##*:}
	kill -KILL "$MASTER_PID"
	_mc_reap "$MASTER_PID"
	start_master --rpc_port="$port" "$@"
}

# wait_readable KEY: the node remounts within a few seconds of the restart.
wait_readable() {
	local i
	for i in $(seq 1 100); do
		get_compare "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	get_compare "$1" || { sed "s|^|# |" "$MC_DIR"/*.log >&2; return 1; }
}

@test "master kill -9: acknowledged objects readable after the restart, removed ones gone" {
	start_master --snapshot_interval_s=0
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
