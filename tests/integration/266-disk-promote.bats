#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Promotion on hit (daemon/master/meta-promote.c): an object read
# promote_after_reads times from its LOCAL_DISK replica is loaded back into
# a memory replica on its node, when the node's segment has room; without
# room it stays on disk and the master counts it.  The bytes stay right
# either way.
bats_require_minimum_version 1.5.0

load helpers

setup() {
	mc_init
	[ -x "$NODE" ] && [ -x "$CTL" ] || skip "mooncake-node / mooncakectl not built"
}

teardown() {
	stop_all
}

# wait_tier KEY TIER: until KEY's replicas are TIER (30 s at most).
wait_tier() {
	local i t
	for i in $(seq 1 300); do
		t=$(tier_of "$1")
		[ "$t" = "$2" ] && return 0
		sleep 0.1
	done
	echo "# $1: $t, wanted $2" >&2
	curl -sf "http://$MASTER_HTTP/metrics" | grep -E "promot|segment_used" >&2
	return 1
}

# wait_master_metric METRIC N: until the master's counter reaches N (30 s at most).
wait_master_metric() {
	local i v
	for i in $(seq 1 300); do
		v=$(master_metric "$1")
		[ "${v:-0}" -ge "$2" ] && return 0
		sleep 0.1
	done
	echo "# $1: ${v:-none}, wanted $2" >&2
	return 1
}

@test "repeated reads promote a LOCAL_DISK object back to memory, when there is room" {
	# no background eviction: the segment stays full after the puts
	start_master --offload_watermark=0 --lease_ttl_ms=500 --promote_after_reads=2 \
		--eviction_high_watermark=1 --write_grant_ttl_ms=500
	start_node ld --segment_size=16M --disk_size=128M
	for n in $(seq 1 8); do run -0 put_random "old$n" 1M; done
	wait_node_metric ld mooncake_node_disk_offloads_total 8
	for n in $(seq 1 16); do run -0 put_random "new$n" 1M; done
	k=
	for n in $(seq 1 8); do
		[ "$(tier_of "old$n")" = local_disk ] && { k=old$n; break; }
	done
	[ -n "$k" ]
	# memory is full: reads are served from disk, the promotion is refused
	run -0 get_compare "$k"
	run -0 get_compare "$k"
	wait_master_metric mooncake_master_promotions_no_room_total 1
	[ "$(tier_of "$k")" = local_disk ]
	[ "$(master_metric mooncake_master_promotions_sent_total)" = 0 ]
	# room: two more reads load it into memory on its node
	sleep 0.6   # the leases of the new objects end
	for n in $(seq 1 4); do run -0 ctl object rm "new$n"; done
	# their blocks come back once their writers' grants are over
	for i in $(seq 1 300); do
		[ "$(master_metric mooncake_master_allocated_bytes)" -le $((12 << 20)) ] && break
		sleep 0.1
	done
	run -0 get_compare "$k"
	run -0 get_compare "$k"
	wait_tier "$k" memory
	[ "$(master_metric mooncake_master_promotions_done_total)" -ge 1 ]
	[ "$(node_metric ld mooncake_node_disk_promoted_total)" -ge 1 ]
	run -0 get_compare "$k"
	run -0 ctl object stat "$k"
	[[ "$output" == *memory* ]]
	# in memory with its disk copy: evicted again, it is LOCAL_DISK at once
	sleep 0.6   # its read lease ends
	run -0 ctl evict --ratio 0
	[ "$(tier_of "$k")" = local_disk ]
	run -0 get_compare "$k"
}

@test "promote_after_reads=0 never promotes" {
	start_master --offload_watermark=0 --lease_ttl_ms=500 --promote_after_reads=0
	start_node ld --segment_size=8M --disk_size=64M
	for n in $(seq 1 4); do run -0 put_random "a$n" 1M; done
	wait_node_metric ld mooncake_node_disk_offloads_total 4
	run -0 ctl evict --ratio 0
	[ "$(tier_of a1)" = local_disk ]
	for i in 1 2 3 4; do run -0 get_compare a1; done
	sleep 1.5   # a few node polls
	[ "$(tier_of a1)" = local_disk ]
	[ "$(master_metric mooncake_master_promotions_sent_total)" = 0 ]
}
