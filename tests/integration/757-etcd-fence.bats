#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# The write fence across a failover (oplog = etcd; issue 14): a PutStart is
# never logged, so the standby that takes over does not know a put in
# progress on the old leader, whose writer still holds a valid write grant.
# The promoted standby places nothing on the node's segment before the
# node remounts it (restored from the log), and the node fences the writes
# under its older keys before it remounts: the late write is refused
# (reason fenced), the range's new object keeps its bytes, the lost put's
# PutEnd fails and its retry succeeds.
bats_require_minimum_version 1.5.0

load helpers
load etcd

setup() {
	etcd_setup
	[ -x "$RPC" ] || skip "mc-rpc not built"
}

teardown() {
	stop_all
}

@test "oplog=etcd: a late write under a grant of the killed leader is refused once the node remounted on the new leader" {
	start_etcd
	start_ha a
	wait_leader a
	start_ha b
	start_node n1
	put_random k0 8K
	A=127.0.0.1:${HA_RPC[a]}
	B=127.0.0.1:${HA_RPC[b]}
	run -0 "$RPC" "$A" put_start lost 4096 99
	[[ "$output" == OK* ]]
	rep=$(rep_of "$output" 1)
	IFS=, read -r ep seg off len grant <<<"$rep"
	[ "$len" = 4096 ] && [ "$grant" != - ]
	run -0 "$RPC" "$ep" write "$seg" "$off" "$len" "$grant" 0x41
	[ "$output" = OK ]
	mounts=$(node_metric n1 mooncake_node_mounts_total)
	failover a b
	wait_node_metric n1 mooncake_node_mounts_total $((mounts + 1))
	wait_readable k0
	late_write_fenced "$B" "$rep"
	get_compare k0
	put_random lost 4K
	get_compare lost
}
