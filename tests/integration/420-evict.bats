#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Eviction on a real cluster: a 16 MiB node filled far past capacity with
# 1 MiB puts while readers keep leases on a set of hot objects.  Every put
# either succeeds or fails with NO_AVAILABLE_HANDLE (all space leased),
# every read returns the right bytes or OBJECT_NOT_FOUND (evicted), hot
# objects under lease survive, and soft-pinned / hard-pinned objects are
# evicted last / never.
bats_require_minimum_version 1.5.0

load helpers

setup() {
	mc_init
	[ -x "$NODE" ] && [ -x "$CTL" ] || skip "mooncake-node / mooncakectl not built"
	start_master --lease_ttl_ms=3000
	start_node ev --segment_size=16M
}

teardown() {
	stop_all
}

@test "puts past capacity evict; leased objects stay; reads are right or not found" {
	for i in 1 2 3; do run -0 put_random "hot$i" 1M; done
	# readers: keep the hot objects leased (a get every ~0.3 s each) until
	# the puts are done, however long they take on a loaded machine
	(
		while [ ! -e "$MC_DIR/puts.done" ]; do
			for i in 1 2 3; do get_compare "hot$i" || echo "hot$i failed" >>"$MC_DIR/reader.err"; done
			sleep 0.3
		done
	) 3>&- &
	reader=$!
	ok=0 full=0
	for n in $(seq 1 60); do
		run put_random "cold$n" 1M
		if [ "$status" -eq 0 ]; then
			ok=$((ok + 1))
		else
			[[ "$output" == *NO_AVAILABLE_HANDLE* ]] || { echo "put cold$n: $output"; false; }
			full=$((full + 1))
		fi
	done
	touch "$MC_DIR/puts.done"
	wait "$reader"
	[ ! -s "$MC_DIR/reader.err" ] || { cat "$MC_DIR/reader.err"; false; }
	[ "$ok" -ge 40 ]   # 60 MiB went through a 16 MiB cache
	# every cold object reads back right, or was evicted
	found=0
	for n in $(seq 1 60); do
		run ctl object get "cold$n" "$MC_DIR/out"
		if [ "$status" -eq 0 ]; then
			cmp "$(_mc_file "cold$n")" "$MC_DIR/out"
			found=$((found + 1))
		else
			[ "$status" -eq 4 ] || { echo "get cold$n: $output"; false; }
		fi
	done
	[ "$found" -ge 1 ] && [ "$found" -le 13 ]   # at most what fits beside the hot ones
	for i in 1 2 3; do run -0 get_compare "hot$i"; done
}

@test "hard-pinned objects are never evicted; soft-pinned ones go after the others" {
	run -0 put_random hard 1M --hard-pin
	run -0 put_random soft 1M --pin-ttl 600000
	for n in $(seq 1 40); do run put_random "fill$n" 1M; done
	run -0 get_compare hard
	run -0 get_compare soft   # newer unpinned objects were there to evict first
	run -0 ctl object unpin soft
	sleep 3.2   # the read above leased it for 3 s
	for n in $(seq 41 80); do run put_random "fill$n" 1M; done
	run -0 get_compare hard
	run -4 ctl object get soft "$MC_DIR/out"   # unpinned and old: gone
}
