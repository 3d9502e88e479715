#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Write-through at PutEnd (`object put --write-through`, DATA_DISK_WRITE):
# the node holding the first memory replica copies the put's bytes to its
# disk tier before the put is acknowledged.  The copy is there at once (no
# offload round), the object's eviction from memory writes nothing more,
# it survives the node's memory (kill -9, shm files gone, the node away
# past client_ttl_ms), a put whose copy cannot be made fails and leaves
# nothing, and the node copies only what the put's grants cover, and
# the copy goes to a node with a disk tier with one replica or two.  The
# masters here never offload in the background
# (offload_watermark=1), so every disk write counted is a write-through.
bats_require_minimum_version 1.5.0

load helpers

setup() {
	mc_init
	[ -x "$NODE" ] && [ -x "$CTL" ] || skip "mooncake-node / mooncakectl not built"
}

teardown() {
	stop_all
}

# disk_objects NAME: how many objects the node's disk tier holds.
disk_objects() { node_metric "$1" mooncake_node_disk_objects; }

# A master and two nodes: nd without a disk tier, ld with one, which the
# master knows from ld's polls (PING then NODE_POLL each tick, one thread:
# a second PING follows the first poll); nd never polls.
nodes_nd_ld() {
	start_master --offload_watermark=1 --promote_after_reads=0
	start_node nd --segment_size=16M
	start_node ld --segment_size=16M --disk_size=128M
	for i in $(seq 1 100); do
		[ "$(node_metric ld mooncake_node_heartbeats_total)" -ge 2 ] && break
		sleep 0.1
	done
	[ "$(node_metric ld mooncake_node_heartbeats_total)" -ge 2 ]
}

@test "a write-through put is on the node's disk when acknowledged; its eviction writes nothing more" {
	start_master --offload_watermark=1 --promote_after_reads=0 --lease_ttl_ms=500
	start_node ld --segment_size=16M --disk_size=128M
	for n in 1 2 3 4; do run -0 put_random "w$n" 1M --write-through; done
	# synchronous: counted and on the disk with no wait
	[ "$(node_metric ld mooncake_node_disk_write_through_total)" -eq 4 ]
	[ "$(disk_objects ld)" -eq 4 ]
	[ "$(tier_of w1)" = memory ]
	run -0 ctl --json object put w5 "$(_mc_file w1)" --write-through
	[ "$(jq -r .write_through <<<"$output")" = true ]
	[ "$(jq -r .placed <<<"$output")" -eq 2 ]   # the memory replica and the disk copy
	# 16 MiB more without: memory evicts the oldest, the written-through ones
	for n in $(seq 1 16); do run -0 put_random "p$n" 1M; done
	disk=0
	for n in 1 2 3 4; do
		run -0 get_compare "w$n"
		[ "$(tier_of "w$n")" != local_disk ] || disk=$((disk + 1))
	done
	echo "# $disk of 4 written-through objects now LOCAL_DISK" >&3
	[ "$disk" -ge 3 ]
	# their eviction wrote nothing: no offload, no other write-through, the
	# disk holds the 5 copies only (the other evicted objects are gone)
	[ "$(node_metric ld mooncake_node_disk_offloads_total)" -eq 0 ]
	[ "$(node_metric ld mooncake_node_disk_write_through_total)" -eq 5 ]
	[ "$(disk_objects ld)" -eq 5 ]
	[ "$(master_metric mooncake_master_offload_evictions_total)" -ge "$disk" ]
	# an overwrite with write-through: of a memory-only value, fine; of one
	# with a disk copy, refused (the node keeps one copy per key)
	run -0 put_random p16 1M --overwrite --write-through
	run -0 get_compare p16
	[ "$(node_metric ld mooncake_node_disk_write_through_total)" -eq 6 ]
	run -1 put_random w1 1M --overwrite --write-through
	[[ "$output" == *NOT_SUPPORTED* ]]
}

@test "write-through objects survive the node's memory: kill -9, shm gone, away past client_ttl_ms" {
	start_master --offload_watermark=1 --promote_after_reads=0 --lease_ttl_ms=500 \
		--client_ttl_ms=2000
	start_node ld --segment_size=16M --disk_size=128M
	for n in 1 2 3; do run -0 put_random "w$n" 256K --write-through; done
	run -0 put_random plain 256K
	[ "$(tier_of w1)" = memory ]
	kill_node ld
	# the memory is lost (as in a reboot): the node comes back with a new segment
	_mc_record_shm ld
	while read -r id; do rm -f "/dev/shm/mooncake-$id"; done <"$MC_DIR/shm"
	# the master drops the node's segment once client_ttl_ms passed
	for i in $(seq 1 300); do
		run ctl object get plain "$MC_DIR/out"
		[ "$status" -eq 4 ] && break
		sleep 0.1
	done
	[ "$status" -eq 4 ]
	start_node ld --segment_size=16M --disk_size=128M
	wait_readable w1
	for n in 1 2 3; do
		run -0 get_compare "w$n"
		[ "$(tier_of "w$n")" = local_disk ]
	done
	run -4 ctl object get plain "$MC_DIR/out"   # memory only: gone with it
	[ "$(master_metric mooncake_master_disk_replicas_adopted_total)" -eq 3 ]
}

@test "a write-through put whose copy cannot be made fails and stores nothing" {
	start_master --offload_watermark=1 --promote_after_reads=0 --lease_ttl_ms=500
	# a disk tier smaller than the object: the disk refuses it
	start_node ld --segment_size=16M --disk_size=2M
	run -1 put_random big 4M --write-through
	[[ "$output" == *NO_AVAILABLE_HANDLE* ]]
	run -4 ctl object get big "$MC_DIR/out"
	[ "$(node_metric ld mooncake_node_disk_write_through_failures_total)" -eq 1 ]
	# the same without write-through is fine; a small one goes through
	run -0 put_random big 4M
	run -0 put_random small 64K --write-through
	run -0 get_compare small
	# no memory replica asked: refused by the client before anything is sent
	run -2 put_random none 64K --write-through --replicas 0 --disk-replicas 1
	kill_node ld TERM
	# a node without a disk tier: NOT_SUPPORTED, nothing stored
	start_node nd --segment_size=16M
	run -1 put_random w 64K --write-through
	[[ "$output" == *NOT_SUPPORTED* ]]
	run -4 ctl object get w "$MC_DIR/out"
}

# field_of LINE NAME N: the N-th (1-based) "NAME=" field of an mc-rpc line.
field_of() {
	tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p" | sed -n "${3}p"
}

@test "the node copies to its disk only what the put's WRITE and DISK_WRITE grants cover" {
	start_master --offload_watermark=1 --promote_after_reads=0
	start_node ld --segment_size=16M --disk_size=128M
	run -0 "$RPC" "$MASTER_ADDR" put_wt wk 5000 7
	[[ "$output" == OK\ replicas=2* ]]
	IFS=, read -r ep seg off len grant <<<"$(field_of "$output" rep 1)"
	IFS=, read -r dep dseg dkey dgrant <<<"$(field_of "$output" ldisk 1)"
	[ "$ep" = "$dep" ] && [ "$seg" = "$dseg" ] && [ "$len" = 5000 ]
	[ "$dkey" = 0764656661756c74776b ]   # tenant "default", key "wk"
	run -0 "$RPC" "$ep" write "$seg" "$off" 5000 "$grant"
	[ "$output" = OK ]
	# missing or swapped grants, another key, more bytes, another range
	run -0 "$RPC" "$ep" disk_write "$seg" "$off" 5000 "$dkey" "$grant" -
	[ "$output" = GRANT_DENIED ]
	run -0 "$RPC" "$ep" disk_write "$seg" "$off" 5000 "$dkey" - "$dgrant"
	[ "$output" = GRANT_DENIED ]
	run -0 "$RPC" "$ep" disk_write "$seg" "$off" 5000 "$dkey" "$dgrant" "$grant"
	[ "$output" = GRANT_DENIED ]
	run -0 "$RPC" "$ep" disk_write "$seg" "$off" 5000 0764656661756c74776c "$grant" "$dgrant"
	[ "$output" = GRANT_DENIED ]
	run -0 "$RPC" "$ep" disk_write "$seg" "$off" 5001 "$dkey" "$grant" "$dgrant"
	[ "$output" = GRANT_DENIED ]
	run -0 "$RPC" "$ep" disk_write "$seg" $((off + 4096)) 5000 "$dkey" "$grant" "$dgrant"
	[ "$output" = GRANT_DENIED ]
	[ "$(node_metric ld mooncake_node_disk_objects)" -eq 0 ]
	# both, as given
	run -0 "$RPC" "$ep" disk_write "$seg" "$off" 5000 "$dkey" "$grant" "$dgrant"
	[ "$output" = OK ]
	[ "$(node_metric ld mooncake_node_disk_objects)" -eq 1 ]
	[ "$(node_metric ld mooncake_node_disk_write_through_total)" -eq 1 ]
	run -0 "$RPC" "$MASTER_ADDR" put_end wk 7
	[ "$output" = OK ]
	# readers get the memory replica only (the disk copy is for its eviction)
	run -0 "$RPC" "$MASTER_ADDR" where wk
	[[ "$output" == *replicas=1* ]] && [[ "$output" != *ldisk=* ]]
}

@test "write-through with two replicas copies on the node that has a disk tier" {
	nodes_nd_ld
	# the placement order is random: without the pick about half would fail
	for n in $(seq 1 12); do run -0 put_random "t$n" 64K --replicas 2 --write-through; done
	[ "$(node_metric ld mooncake_node_disk_write_through_total)" -eq 12 ]
	[ "$(node_metric ld mooncake_node_disk_write_through_failures_total)" -eq 0 ]
	[ "$(disk_objects ld)" -eq 12 ]
	for n in 1 6 12; do run -0 get_compare "t$n"; done
}

@test "write-through with one replica is placed on the node that has a disk tier" {
	nodes_nd_ld
	# one replica: nothing to reorder, placement itself picks ld (about
	# half would land on nd and fail without it)
	for n in $(seq 1 12); do run -0 put_random "o$n" 64K --replicas 1 --write-through; done
	[ "$(node_metric ld mooncake_node_disk_write_through_total)" -eq 12 ]
	[ "$(node_metric ld mooncake_node_disk_write_through_failures_total)" -eq 0 ]
	[ "$(disk_objects ld)" -eq 12 ]
	for n in 1 6 12; do run -0 get_compare "o$n"; done
}
