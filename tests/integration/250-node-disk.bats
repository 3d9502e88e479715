#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# The node's disk tier as a real process: each storage_backend opens its
# directory (disk_dir, or state_dir/disk), logs the rebuilt index, exports
# the mooncake_node_disk_* metrics and keeps its files across a restart;
# a disk_size larger than the file system is a clear error at start.
bats_require_minimum_version 1.5.0

load helpers

setup() {
	mc_init
	[ -x "$NODE" ] || skip "mooncake-node not built"
	start_master
}

teardown() {
	stop_all
}

@test "every backend opens, reports its capacity and restarts on its files" {
	for b in offset file bucket; do
		start_node "d$b" --storage_backend="$b" --disk_size=64M
		run -0 grep "disk tier: $b backend in $MC_DIR/node-d$b/disk, 0 of 67108864 bytes used by 0 objects" "$MC_DIR/node-d$b.log"
		run -0 curl -sf "http://$(node_http "d$b")/metrics"
		[[ "$output" == *"mooncake_node_disk_capacity_bytes 67108864"* ]]
		[[ "$output" == *"mooncake_node_disk_objects 0"* ]]
		[[ "$output" == *"mooncake_node_disk_corrupt_total 0"* ]]
		[ -d "$MC_DIR/node-d$b/disk" ]
		kill_node "d$b"
		start_node "d$b" --storage_backend="$b" --disk_size=64M
		run -0 grep -c "disk tier: $b backend" "$MC_DIR/node-d$b.log"
	done
	[ -f "$MC_DIR/node-doffset/disk/data" ]
	[ "$(stat -c %s "$MC_DIR/node-doffset/disk/data")" = 67108864 ]
	[ -d "$MC_DIR/node-dfile/disk/objects" ]
}

@test "a node without disk_size has no disk tier; a bad backend is refused" {
	start_node plain
	run -0 curl -sf "http://$(node_http plain)/metrics"
	[[ "$output" == *"mooncake_node_disk_capacity_bytes 0"* ]]
	[ ! -e "$MC_DIR/node-plain/disk" ]
	run ! "$NODE" --storage_backend=nvme --disk_size=1M --state_dir="$BATS_TEST_TMPDIR/x"
	[[ "$output" == *"storage_backend"* ]]
}

@test "a disk_size the file system cannot hold is a clear error at start; the segment file it created is gone" {
	run ! "$NODE" --master="$MASTER_ADDR" --data_port=0 --http_port=0 --segment_size=1M \
		--state_dir="$BATS_TEST_TMPDIR/big" --disk_size=64T
	[[ "$output" == *"cannot open the disk tier (offset backend)"* ]]
	[[ "$output" == *"not enough free space for disk_size"* ]]
	local f
	f=$(sed -n 's/.*bytes, \(\/[^ ]*\) (new).*/\1/p' <<<"$output")
	[ -n "$f" ]
	[ ! -e "$f" ]
}
