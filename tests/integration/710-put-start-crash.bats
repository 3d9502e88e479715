#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# PutStart is off the fsync path (issue 14): it appends nothing to the oplog
# (an unfinished write is not logged), so it waits for no fsync.  A crash
# between PutStart and PutEnd loses the unfinished write, which is what
# recovery must give: after kill -9 and a restart the key does not exist,
# its client retries the put and succeeds, and what was acknowledged
# before is intact (nothing acknowledged depended on the PutStart).  The
# lost put's writer still holds a valid write grant: the node fences the
# writes under its older keys before it remounts (node-grant.h), so a late
# write cannot land on the range the restored master gives to another put.
# A full cache (PutStarts that evict: they wait for their DELETEs) stays
# correct over kill -9.
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

# crash_master: kill -9 of the master, started again on $port; returns once
# node n1 has remounted on it.
crash_master() {
	local mounts
	mounts=$(node_metric n1 mooncake_node_mounts_total)
	kill -KILL "$MASTER_PID"
	_mc_reap "$MASTER_PID" || _mc_reap "$MASTER_PID" || true
	start_master --rpc_port="$port" --snapshot_interval_s=0
	wait_node_metric n1 mooncake_node_mounts_total $((mounts + 1))
}

@test "the write fence: after a master restart a late write under the lost put's grant is refused, the range's new object keeps its bytes" {
	port=$(free_port)
	start_master --rpc_port="$port" --snapshot_interval_s=0
	start_node n1
	put_random k0 8K
	run -0 "$RPC" "$MASTER_ADDR" put_start lost 4096 99
	[[ "$output" == OK* ]]
	rep=$(rep_of "$output" 1)
	IFS=, read -r ep seg off len grant <<<"$rep"
	[ "$len" = 4096 ] && [ "$grant" != - ]
	run -0 "$RPC" "$ep" write "$seg" "$off" "$len" "$grant" 0x41
	[ "$output" = OK ]                   # the grant works before the restart
	crash_master
	wait_readable k0
	run -0 "$RPC" "$MASTER_ADDR" get lost
	[[ "$output" == OBJECT_NOT_FOUND* ]]
	late_write_fenced "$MASTER_ADDR" "$rep"
	# and a read under the old key is still served (reads are not fenced)
	get_compare k0
	put_random lost 4K                    # the client's retry
	get_compare lost
}

@test "a full cache over kill -9: evicting puts, then a crash; every object left reads as its own bytes" {
	port=$(free_port)
	start_master --rpc_port="$port" --snapshot_interval_s=0
	start_node n1 --segment_size=4M
	# 24 objects of 512 KiB in a 4 MiB segment: the later PutStarts evict
	for i in $(seq 1 24); do put_random "f$i" 512K; done
	evicted=$(curl -sf "http://$MASTER_HTTP/metrics" |
		awk '$1 ~ /^mooncake_master_evicted_objects_total[{]/ { n += $2 } END { print n + 0 }')
	[ "$evicted" -gt 0 ]
	crash_master
	wait_readable f24
	check_all 24
	[ "$found" -ge 4 ] && [ "$found" -lt 24 ]
	# the cache goes on evicting and stays correct
	for i in $(seq 25 32); do put_random "f$i" 512K; done
	check_all 32
	[ "$found" -ge 4 ]
}

# check_all N: every one of f1..fN still there reads as its own bytes; the
# others are not found.  Sets found.
check_all() {
	found=0
	for i in $(seq 1 "$1"); do
		run "$RPC" "$MASTER_ADDR" get "f$i"
		if [[ "$output" == OK* ]]; then
			get_compare "f$i"             # never another object's bytes
			found=$((found + 1))
		else
			[[ "$output" == OBJECT_NOT_FOUND* ]]
		fi
	done
}
