#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# PutStart is off the fsync path (issue 14): it appends nothing to the oplog
# (an unfinished write is not logged), so it waits for no fsync.  A crash
# between PutStart and PutEnd loses the unfinished write, which is what
# recovery must give: after kill -9 and a restart the key does not exist,
# its client retries the put and succeeds, and what was acknowledged
# before is intact (nothing acknowledged depended on the PutStart).
bats_require_minimum_version 1.5.0

load helpers

setup() {
	mc_init
	[ -x "$NODE" ] && [ -x "$CTL" ] && [ -x "$RPC" ] || skip "daemons, mooncakectl or mc-rpc not built"
}

teardown() {
	stop_all
}

oplog_bytes() { cat "$MC_DIR"/master/oplog/*.log | wc -c; }

@test "kill -9 between PutStart and PutEnd: the unfinished put is gone, its retry succeeds, acknowledged objects stay" {
	port=$(free_port)
	start_master --rpc_port="$port" --snapshot_interval_s=0
	start_node n1
	put_random k0 8K
	before=$(oplog_bytes)
	run -0 "$RPC" "$MASTER_ADDR" put_start k1 4096 99
	[[ "$output" == OK* ]]
	run -0 "$RPC" "$MASTER_ADDR" put_start k2 4096 99
	[[ "$output" == OK* ]]
	[ "$(oplog_bytes)" = "$before" ]     # nothing logged: no fsync waited for
	kill -KILL "$MASTER_PID"
	_mc_reap "$MASTER_PID" || _mc_reap "$MASTER_PID" || true
	start_master --rpc_port="$port" --snapshot_interval_s=0
	for _ in $(seq 1 100); do get_compare k0 2>/dev/null && break; sleep 0.1; done
	get_compare k0
	run -0 "$RPC" "$MASTER_ADDR" get k1
	[[ "$output" == OBJECT_NOT_FOUND* ]]
	put_random k1 4K                      # the client's retry
	get_compare k1
	put_random k2 4K
	get_compare k2
	get_compare k0
}
