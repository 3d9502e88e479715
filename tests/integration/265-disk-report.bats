#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# A node's report of its disk tier (NODE_POLL's have / drop lists and the
# master's epoch): a master restarted without its oplog learns the node's
# LOCAL_DISK objects again; a node killed mid-load comes back with every
# acknowledged object that reached its disk readable; copies of removed
# objects are deleted, never resurrected; ON_DISK (a memory object with a
# copy) survives a master restart with its oplog.
bats_require_minimum_version 1.5.0

load helpers

setup() {
	mc_init
	[ -x "$NODE" ] && [ -x "$CTL" ] || skip "mooncake-node / mooncakectl not built"
}

teardown() {
	stop_all
}

@test "a master restarted without its oplog learns the node's disk objects again" {
	local opts=(--oplog=off --snapshot_interval_s=0 --offload_watermark=0 \
		--promote_after_reads=0 --lease_ttl_ms=1000)
	start_master --rpc_port="$(free_port)" "${opts[@]}"
	start_node ld --segment_size=16M --disk_size=128M
	for n in $(seq 1 6); do run -0 put_random "k$n" 1M; done
	wait_node_metric ld mooncake_node_disk_offloads_total 6
	for n in $(seq 1 20); do run -0 put_random "f$n" 1M; done
	[ "$(tier_of k1)" = local_disk ]
	ondisk=()
	for n in $(seq 1 6); do [ "$(tier_of "k$n")" != local_disk ] || ondisk+=("k$n"); done
	echo "# ${#ondisk[@]} of 6 on disk before the restart" >&3
	restart_master "${opts[@]}"
	# the node re-registers, remounts, polls, and reports its disk
	wait_readable k1
	for k in "${ondisk[@]}"; do
		run -0 get_compare "$k"
		[ "$(tier_of "$k")" = local_disk ]
	done
	[ "$(master_metric mooncake_master_disk_replicas_adopted_total)" -ge "${#ondisk[@]}" ]
	[ "$(node_metric ld mooncake_node_disk_reported_total)" -ge "${#ondisk[@]}" ]
	# the epoch is the master's own metadata KV key: not shown, not taken, not counted
	run -0 curl -s -o /dev/null -w '%{http_code}' \
		"http://$MASTER_HTTP/metadata?key=__mooncake_master/disk_epoch"
	[ "$output" = 404 ]
	run -0 curl -s -o /dev/null -w '%{http_code}' -X PUT --data 0000000000000001 \
		"http://$MASTER_HTTP/metadata?key=__mooncake_master/disk_epoch"
	[ "$output" = 403 ]
	[ "$(master_metric mooncake_master_metadata_keys)" = 0 ]
	# the objects the master learnt are its own now: a remove is final, and
	# the copy goes from the disk at the node's next restart
	run -0 ctl object rm --force k1
	kill_node ld
	start_node ld --segment_size=16M --disk_size=128M
	wait_node_metric ld mooncake_node_disk_stale_dropped_total 1
	run -4 ctl object get k1 "$MC_DIR/out"
	for k in "${ondisk[@]:1}"; do run -0 get_compare "$k"; done
}

@test "kill -9 of the node mid-load: every acknowledged object on its disk reads back" {
	start_master --offload_watermark=0 --promote_after_reads=0 --lease_ttl_ms=1000
	start_node ld --segment_size=16M --disk_size=256M
	: >"$MC_DIR/acked"
	(
		for n in $(seq 1 40); do
			put_random "m$n" 1M >/dev/null 2>&1 && echo "m$n" >>"$MC_DIR/acked"
		done
	) 3>&- &
	local loader=$!
	wait_node_metric ld mooncake_node_disk_offloads_total 12
	# killed while puts and copies go on; back well within client_ttl_ms
	kill_node ld
	start_node ld --segment_size=16M --disk_size=256M
	wait "$loader" || true
	local acked disk=0 mem=0 gone=0
	acked=$(wc -l <"$MC_DIR/acked")
	while read -r k; do
		run get_compare "$k"
		if [ "$status" -eq 0 ]; then
			if [ "$(tier_of "$k")" = local_disk ]; then disk=$((disk + 1)); else mem=$((mem + 1)); fi
		else   # evicted from memory before its copy was confirmed
			[ "$status" -eq 4 ] || { echo "$k: $output"; false; }
			gone=$((gone + 1))
		fi
	done <"$MC_DIR/acked"
	echo "# $acked acknowledged: $disk from disk, $mem from memory, $gone evicted" >&3
	[ "$acked" -ge 20 ] && [ "$disk" -ge 12 ]
	# the restarted node checked its disk with the master (the same epoch:
	# nothing adopted, only unconfirmed copies named stale)
	[ "$(node_metric ld mooncake_node_disk_reported_total)" -ge 12 ]
	[ "$(master_metric mooncake_master_disk_replicas_adopted_total)" -eq 0 ]
}

@test "a memory object's disk copy (ON_DISK) survives a master restart with its oplog" {
	local opts=(--snapshot_interval_s=0 --offload_watermark=0 \
		--promote_after_reads=0 --lease_ttl_ms=1000)
	start_master --rpc_port="$(free_port)" "${opts[@]}"
	start_node ld --segment_size=16M --disk_size=128M
	for n in $(seq 1 4); do run -0 put_random "c$n" 1M; done
	wait_node_metric ld mooncake_node_disk_offloads_total 4
	[ "$(tier_of c1)" = memory ]
	restart_master "${opts[@]}"
	wait_readable c1
	# put three times the segment: the copies are known, so eviction keeps
	# them (how many puts evict c1 depends on when the node's copies of the
	# g objects are confirmed; a read of a c object would renew its place)
	for n in $(seq 1 48); do run -0 put_random "g$n" 1M; done
	for n in $(seq 1 4); do [ "$(tier_of "c$n")" = local_disk ]; done
	for n in $(seq 1 4); do run -0 get_compare "c$n"; done
	[ "$(master_metric mooncake_master_disk_replicas_adopted_total)" -eq 0 ]
}

@test "a master restarted without its oplog from an older snapshot learns what came after it" {
	local opts=(--oplog=off --snapshot_interval_s=0 --offload_watermark=0 \
		--promote_after_reads=0 --lease_ttl_ms=1000)
	start_master --rpc_port="$(free_port)" "${opts[@]}"
	start_node ld --segment_size=16M --disk_size=128M
	for n in 1 2 3; do run -0 put_random "a$n" 1M; done
	wait_node_metric ld mooncake_node_disk_offloads_total 3
	run -0 ctl snapshot create
	for n in 1 2 3; do run -0 put_random "b$n" 1M; done
	wait_node_metric ld mooncake_node_disk_offloads_total 6
	for n in $(seq 1 20); do run -0 put_random "f$n" 1M; done
	[ "$(tier_of b1)" = local_disk ]
	restart_master "${opts[@]}"
	# the snapshot knows a1..a3 (in memory then), not b1..b3; the new epoch
	# makes the node report, and the master adopts b1..b3 from its disk
	wait_readable b1
	for n in 1 2 3; do
		run -0 get_compare "b$n"
		[ "$(tier_of "b$n")" = local_disk ]
	done
	[ "$(master_metric mooncake_master_disk_replicas_adopted_total)" -ge 3 ]
}

@test "LOCAL_DISK objects larger than a DATA_DISK_READ chunk read back in chunks, in parallel" {
	# chunked reads share the node's one-object cache (node-disk-read.c):
	# readers of two objects at once take turns in it, or read the disk;
	# a longer lease than elsewhere, for a loaded machine
	start_master --offload_watermark=0 --promote_after_reads=0 --lease_ttl_ms=8000
	start_node ld --segment_size=40M --disk_size=128M
	run -0 put_random big 20M
	run -0 put_random big2 12M
	wait_node_metric ld mooncake_node_disk_offloads_total 2
	sleep 8   # their puts' leases run out: they may be evicted
	for n in 1 2 3 4; do run -0 put_random "s$n" 8M; done
	[ "$(tier_of big)" = local_disk ] && [ "$(tier_of big2)" = local_disk ]
	local pids=() p
	for n in 1 2 3; do
		get_compare big & pids+=($!)
		get_compare big2 & pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p"; done
	run -0 get_compare big
}

@test "a node away longer than client_ttl_ms gets its disk objects back, but for those removed meanwhile" {
	start_master --offload_watermark=0 --promote_after_reads=0 --lease_ttl_ms=500 \
		--client_ttl_ms=2000
	start_node ld --segment_size=16M --disk_size=128M
	for n in $(seq 1 6); do run -0 put_random "k$n" 1M; done
	wait_node_metric ld mooncake_node_disk_offloads_total 6
	for n in $(seq 1 20); do run -0 put_random "f$n" 1M; done
	ondisk=()
	for n in $(seq 1 6); do [ "$(tier_of "k$n")" != local_disk ] || ondisk+=("k$n"); done
	echo "# ${#ondisk[@]} of 6 on disk" >&3
	[ "${#ondisk[@]}" -ge 2 ]
	all=0   # every object that is LOCAL_DISK now
	for k in k{1..6} f{1..20}; do [ "$(tier_of "$k")" != local_disk ] || all=$((all + 1)); done
	# stopped: the master drops the node, its segments and LOCAL_DISK replicas
	kill -STOP "$(node_pid ld)"
	for i in $(seq 1 300); do
		run ctl object get "${ondisk[0]}" "$MC_DIR/out"
		[ "$status" -eq 4 ] && break
		sleep 0.1
	done
	[ "$status" -eq 4 ]
	run ctl object rm "${ondisk[0]}"   # removed meanwhile (nothing to remove now)
	kill -CONT "$(node_pid ld)"
	# back: it remounts, the master asks for its disk and adopts the copies
	wait_readable "${ondisk[1]}"
	for k in "${ondisk[@]:1}"; do
		run -0 get_compare "$k"
		[ "$(tier_of "$k")" = local_disk ]
	done
	run -4 ctl object get "${ondisk[0]}" "$MC_DIR/out"
	# adopted: every LOCAL_DISK object but the removed one, and the memory
	# objects that had a copy (the unmount kept those too), nothing without one
	adopted=$(master_metric mooncake_master_disk_replicas_adopted_total)
	[ "$adopted" -ge $((all - 1)) ]
	[ "$adopted" -le $(($(node_metric ld mooncake_node_disk_offloads_total) - 1)) ]
	wait_node_metric ld mooncake_node_disk_stale_dropped_total 1   # the removed one's copy
}
