#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# LOCAL_DISK replicas end to end: a node with a 16 MiB segment and a disk
# tier takes more puts than fit.  The master has it copy its objects to the
# disk ahead of eviction (NODE_POLL, offload_watermark 0 here), eviction
# then keeps them as LOCAL_DISK replicas, `object stat` shows the tier, and
# every object reads back byte for byte, from memory or from the node's
# disk -- also after a kill -9 and restart of the node, and of the master
# (the replicas are in its oplog).
bats_require_minimum_version 1.5.0

load helpers

setup() {
	mc_init
	[ -x "$NODE" ] && [ -x "$CTL" ] || skip "mooncake-node / mooncakectl not built"
}

teardown() {
	stop_all
}

@test "evicted objects stay on the node's disk and read back byte for byte, across kill -9" {
	start_master --offload_watermark=0 --promote_after_reads=0 --lease_ttl_ms=1000
	start_node ld --segment_size=16M --disk_size=128M
	for n in $(seq 1 8); do run -0 put_random "old$n" 1M; done
	wait_node_metric ld mooncake_node_disk_offloads_total 8
	# 16 more MiB: the old objects are the oldest, their memory goes
	for n in $(seq 1 16); do run -0 put_random "new$n" 1M; done
	disk=0
	for n in $(seq 1 8); do
		t=$(tier_of "old$n")
		[ "$t" = local_disk ] && disk=$((disk + 1))
		[ "$t" = local_disk ] || [ "$t" = memory ] || { echo "old$n: $t"; false; }
	done
	echo "# $disk of 8 old objects on disk" >&3
	[ "$disk" -ge 4 ]
	for n in $(seq 1 8); do run -0 get_compare "old$n"; done
	for n in $(seq 1 16); do
		run get_compare "new$n"
		[ "$status" -eq 0 ] || [ "$status" -eq 4 ] || { echo "new$n: $output"; false; }
	done
	run -0 ctl object stat old1
	[[ "$output" == *local_disk* ]]
	# kill -9 and restart: the disk tier and the segments (shm) come back,
	# the master keeps the replicas (the node is back within client_ttl_ms)
	kill_node ld
	start_node ld --segment_size=16M --disk_size=128M
	for n in $(seq 1 8); do run -0 get_compare "old$n"; done
	[ "$(tier_of old1)" = local_disk ]
}

@test "LOCAL_DISK replicas survive a master restart (oplog) and go with an unmounted node" {
	start_master --rpc_port="$(free_port)" --snapshot_interval_s=0 --offload_watermark=0 \
		--promote_after_reads=0 --lease_ttl_ms=1000
	start_node ld --segment_size=16M --disk_size=128M
	for n in $(seq 1 6); do run -0 put_random "k$n" 1M; done
	wait_node_metric ld mooncake_node_disk_offloads_total 6
	for n in $(seq 1 20); do run -0 put_random "f$n" 1M; done
	[ "$(tier_of k1)" = local_disk ]
	restart_master --snapshot_interval_s=0 --offload_watermark=0 \
		--promote_after_reads=0 --lease_ttl_ms=1000
	wait_readable k1
	[ "$(tier_of k1)" = local_disk ]
	# SIGTERM: the node unmounts its segment; its LOCAL_DISK replicas go too
	kill_node ld TERM
	run -4 ctl object get k1 "$MC_DIR/out"
}

@test "a full disk tier evicts its oldest objects and the master forgets them" {
	start_master --offload_watermark=0 --promote_after_reads=0 --lease_ttl_ms=1000
	# memory for 8 objects of 1 MiB, disk for about 11 (each record is padded
	# to 4 KiB): the disk holds the newest, some of them evicted from memory
	start_node ld --segment_size=8M --disk_size=12M
	for n in $(seq 1 40); do
		run -0 put_random "d$n" 1M
		[ $((n % 8)) -ne 0 ] || wait_node_metric ld mooncake_node_disk_offloads_total "$n"
	done
	sleep 1   # the last gone keys reach the master with the next poll
	[ "$(node_metric ld mooncake_node_disk_gone_total)" -ge 20 ]
	[ "$(node_metric ld mooncake_node_disk_offloads_total)" -le 45 ]   # no copy made over and over
	# the master counts the disk tier's evictions as evictions of tier local_disk
	gone=$(node_metric ld mooncake_node_disk_gone_total)
	for i in $(seq 1 100); do
		[ "$(master_metric 'mooncake_master_evicted_objects_total{reason="watermark",tier="local_disk"}')" \
			-ge "$gone" ] && break
		sleep 0.1
	done
	[ "$(master_metric 'mooncake_master_evicted_objects_total{reason="watermark",tier="local_disk"}')" \
		-ge "$gone" ]
	[ "$(master_metric 'mooncake_master_evicted_bytes_total{reason="watermark",tier="local_disk"}')" \
		-ge $((gone << 20)) ]
	found=0 disk=0
	for n in $(seq 1 40); do
		run get_compare "d$n"
		if [ "$status" -eq 0 ]; then
			found=$((found + 1))
			[ "$(tier_of "d$n")" != local_disk ] || disk=$((disk + 1))
		else
			[ "$status" -eq 4 ] || { echo "d$n: $output"; false; }
		fi
	done
	echo "# $found of 40 readable, $disk from disk" >&3
	[ "$disk" -ge 1 ] && [ "$disk" -le 11 ]
	# the oldest went from the disk too: not found, and not listed
	run -4 ctl object get d1 "$MC_DIR/out"
	run -0 curl -sf "http://$(node_http ld)/metrics"
	[[ "$output" == *'mooncake_node_disk_offload_failures_total 0'* ]]
}
