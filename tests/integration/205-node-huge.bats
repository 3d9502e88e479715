#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Segment memory in 2 MiB pages (the node's huge_pages option,
# node-segment.h): a node on /dev/shm folds its segment in the background
# and says when it is done; its own mapping then maps 2 MiB pages; objects
# put before and during the fold read back byte for byte through a
# co-located client (shared memory) and through TCP.  With
# huge_pages=false the node says it stays in 4 KiB pages.  A kernel without
# MADV_COLLAPSE (before 6.1) skips the fold tests, saying so.
bats_require_minimum_version 1.5.0

load helpers

setup() {
	mc_init
}

teardown() {
	stop_all
}

# wait_fold NODE: waits (60 s at most) for the node's line about its huge
# pages; skips when the kernel cannot fold.
wait_fold() {
	local log=$MC_DIR/node-$1.log i
	for i in $(seq 1 600); do
		grep -q 'segment memory in 2 MiB pages' "$log" && return 0
		grep -q 'segment memory stays in 4 KiB pages' "$log" &&
			skip "$(grep -o 'segment memory stays.*' "$log")"
		sleep 0.1
	done
	sed 's/^/# /' "$log" >&2
	return 1
}

# pmd_kb NODE: kB of the node's segment mapping mapped by 2 MiB entries.
pmd_kb() {
	awk '/mooncake-[0-9a-f]+/ { f = 1; next } /^[0-9a-f]+-[0-9a-f]+ / { f = 0 }
	     f && $1 == "ShmemPmdMapped:" { s += $2 } END { print s + 0 }' "/proc/$(node_pid "$1")/smaps"
}

@test "a node on /dev/shm folds its segment into 2 MiB pages; objects put before and during read back" {
	start_master
	start_node n1 --segment_size=64M --shm_dir=/dev/shm
	local i
	for i in 1 2 3 4; do
		put_random "before$i" $((i * 700))K
	done
	wait_fold n1
	grep -o 'segment memory in 2 MiB pages.*' "$MC_DIR/node-n1.log" | sed 's/^/# /' >&3
	grep -q 'segment memory in 2 MiB pages: 64 of 64 MiB' "$MC_DIR/node-n1.log"
	[ "$(pmd_kb n1)" -gt 0 ]
	for i in 1 2 3 4; do
		get_compare "before$i"
		MC_DISABLE_SHM=1 get_compare "before$i"
		put_random "after$i" $((i * 900))K
		get_compare "after$i"
		MC_DISABLE_SHM=1 get_compare "after$i"
	done
}

@test "huge_pages=false: the node says its segment stays in 4 KiB pages" {
	start_master
	start_node n1 --shm_dir=/dev/shm --huge_pages=false
	grep -q "huge_pages is off" "$MC_DIR/node-n1.log"
	run -1 grep -q "segment memory in 2 MiB pages" "$MC_DIR/node-n1.log"
	put_random k 3M
	get_compare k
}
