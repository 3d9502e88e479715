#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# BatchGetOffloadObject: a batch get of LOCAL_DISK objects has the node
# stage them in its memory in one disk batch (DATA_DISK_STAGE), reads them
# over the data plane and releases the stage (lib/client/client-stage.c,
# daemon/node/node-stage.c).  Byte for byte, beside memory objects, with a
# staging space too small (the rest read per object), and with the node
# killed after staging (a clear error per object, no hang).
bats_require_minimum_version 1.5.0

load helpers

BATCH=$BATS_TEST_DIRNAME/../../.output/tests/tools/mc-batch

setup() {
	mc_init
	BATCH=$O/tests/tools/mc-batch
	[ -x "$NODE" ] && [ -x "$BATCH" ] || skip "mooncake-node / mc-batch not built"
	mkdir -p "$MC_DIR/out"
}

teardown() {
	stop_all
}

# disk_objects N SIZE [node options]: a master and node "sb" whose memory
# (4 MiB) cannot keep N objects b1..bN of SIZE once 6 MiB more are put:
# the b objects are copied to the disk tier ahead of eviction, then evicted
# from memory.  Sets disk: how many are on disk only (COUNT=1; else 0: a
# `ctl object stat` per object is slow on a loaded machine).
disk_objects() {
	local n=$1 size=$2 i
	disk=0
	shift 2
	start_master --offload_watermark=0 --promote_after_reads=0 --lease_ttl_ms=1000
	start_node sb --segment_size=4M --disk_size=64M "$@"
	for i in $(seq 1 "$n"); do put_random "b$i" "$size" >/dev/null || return; done
	wait_node_metric sb mooncake_node_disk_offloads_total "$n" || return
	for i in $(seq 1 6); do put_random "f$i" 1M >/dev/null || return; done
	[ "${COUNT:-0}" = 1 ] || return 0
	for i in $(seq 1 "$n"); do
		[ "$(tier_of "b$i")" != local_disk ] || disk=$((disk + 1))
	done
	echo "# $disk of $n on disk only" >&3
}

# compare_out KEY...: each KEY's batch-get output is what put_random wrote.
compare_out() {
	local k
	for k in "$@"; do cmp "$(_mc_file "$k")" "$MC_DIR/out/$k" || return; done
}

@test "a batch of 48 LOCAL_DISK objects is staged in one request and read byte for byte" {
	COUNT=1 disk_objects 48 64K
	[ "$disk" -ge 32 ]
	keys=$(printf 'b%d ' $(seq 1 48))
	# shellcheck disable=SC2086
	run -0 "$BATCH" get "$MASTER_ADDR" "$MC_DIR/out" 64K $keys
	# shellcheck disable=SC2086
	compare_out $keys
	[ "$(node_metric sb mooncake_node_staged_objects_total)" -ge "$disk" ]
	[ "$(node_metric sb mooncake_node_staged_bytes_total)" -ge $((disk * 65536)) ]
	# released by the client at once: nothing left staged
	[ "$(node_metric sb mooncake_node_staging_released_total)" -ge 1 ]
	[ "$(node_metric sb mooncake_node_staging_used_bytes)" -eq 0 ]
	[ "$(node_metric sb mooncake_node_staging_stages)" -eq 0 ]
	[ "$(node_metric sb mooncake_node_staging_full_total)" -eq 0 ]
	# mc_batch_get_alloc (sizes the caller does not know) stages too
	staged=$(node_metric sb mooncake_node_staged_objects_total)
	rm -f "$MC_DIR"/out/*
	# shellcheck disable=SC2086
	MC_BATCH_ALLOC=1 run -0 "$BATCH" get "$MASTER_ADDR" "$MC_DIR/out" 64K $keys
	# shellcheck disable=SC2086
	compare_out $keys
	[ "$(node_metric sb mooncake_node_staged_objects_total)" -ge $((staged + disk)) ]
	# the same batch per object (MC_DISK_STAGE=0): nothing more staged
	staged=$(node_metric sb mooncake_node_staged_objects_total)
	rm -f "$MC_DIR"/out/*
	# shellcheck disable=SC2086
	MC_DISK_STAGE=0 run -0 "$BATCH" get "$MASTER_ADDR" "$MC_DIR/out" 64K $keys
	# shellcheck disable=SC2086
	compare_out $keys
	[ "$(node_metric sb mooncake_node_staged_objects_total)" -eq "$staged" ]
}

@test "a batch mixing memory and disk objects reads both byte for byte" {
	disk_objects 16 64K
	keys="f6 b1 f5 b2 b3 f4 $(printf 'b%d ' $(seq 4 16))"
	# shellcheck disable=SC2086
	run -0 "$BATCH" get "$MASTER_ADDR" "$MC_DIR/out" 1M $keys
	# shellcheck disable=SC2086
	compare_out $keys
	[ "$(node_metric sb mooncake_node_staged_objects_total)" -ge 8 ]
	[ "$(tier_of f6)" = memory ]
	[ "$(tier_of b1)" = local_disk ]
}

@test "a staging space too small stages what fits and the rest is read per object" {
	# 192 KiB of staging: three objects of 64 KiB per request
	disk_objects 16 64K --staging_size=192K
	keys=$(printf 'b%d ' $(seq 1 16))
	# shellcheck disable=SC2086
	run -0 "$BATCH" get "$MASTER_ADDR" "$MC_DIR/out" 64K $keys
	# shellcheck disable=SC2086
	compare_out $keys
	staged=$(node_metric sb mooncake_node_staged_objects_total)
	full=$(node_metric sb mooncake_node_staging_full_total)
	echo "# staged $staged, refused for space $full" >&3
	[ "$staged" -ge 1 ] && [ "$staged" -le 3 ]
	[ "$full" -ge 5 ]
	[ "$(node_metric sb mooncake_node_staging_used_bytes)" -eq 0 ]
}

@test "a node killed after staging: each object read gets a clear error, no hang" {
	disk_objects 16 64K
	keys=$(printf 'b%d ' $(seq 1 16))
	# each read that succeeds waits 300 ms (a test hook): the node dies
	# while the staged objects are being read
	# shellcheck disable=SC2086
	MC_TEST_READ_DELAY_MS=300 timeout 60 "$BATCH" get "$MASTER_ADDR" "$MC_DIR/out" 64K $keys \
		>"$MC_DIR/batch.out" 2>&1 &
	bpid=$!
	wait_node_metric sb mooncake_node_staged_objects_total 1
	kill_node sb
	rc=0
	wait "$bpid" || rc=$?
	cat "$MC_DIR/batch.out"
	[ "$rc" -eq 3 ]   # some read, some not; not the timeout's 124
	# every key has a line: its bytes (compared) or an error name
	[ "$(wc -l <"$MC_DIR/batch.out")" -eq 16 ]
	while read -r k st rest; do
		if [ "$st" = 0 ]; then
			compare_out "$k"
		else
			[[ "$rest" == *RPC* || "$rest" == *TRANSFER* || "$rest" == *NOT_FOUND* ]]
		fi
	done <"$MC_DIR/batch.out"
	grep -q ' -[0-9]* ' "$MC_DIR/batch.out"
}
