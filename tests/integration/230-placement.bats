#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Placement across failure domains, as the fault: a node with --segments=2
# and a second node; every object put with --replicas 2 must have its two
# replicas on the two nodes, so that killing either node loses nothing.
# A put asking for more replicas than there are nodes places what it can
# and says so (mooncakectl, -o json "placed").
bats_require_minimum_version 1.5.0

load helpers

setup() {
	mc_init
}

teardown() {
	stop_all
}

@test "2 replicas on a node with 2 segments plus a second node: always on both nodes" {
	start_master
	start_node n1 --segments=2
	start_node n2
	local i eps
	for i in $(seq 1 12); do
		put_random "k$i" 4096 --replicas 2
		run -0 "$RPC" "$MASTER_ADDR" where "k$i"
		[[ "$output" == *"replicas=2"* ]]
		eps=$(tr ' ' '\n' <<<"$output" | sed -n 's/^rep=\([^,]*\),.*/\1/p' | sort -u | wc -l)
		[ "$eps" = 2 ]
	done
	# the node with two segments dies: every object is still readable
	kill_node n1
	for i in $(seq 1 12); do
		get_compare "k$i"
	done
}

@test "more replicas than nodes: the put places what it can and says so" {
	start_master
	start_node n1 --segments=3
	start_node n2
	head -c 1000 /dev/urandom >"$MC_DIR/data/f"
	run -0 ctl object put three "$MC_DIR/data/f" --replicas 3
	[[ "$output" == *"stored 'three' (1000 bytes)"* ]]
	[[ "$output" == *"only 2 of 3 replicas placed"* ]]
	run -0 --separate-stderr ctl -o json object put four "$MC_DIR/data/f" --replicas 4
	[ "$(jq -r .placed <<<"$output")" = 2 ]
	[ "$(jq -r .replicas <<<"$output")" = 4 ]
	[[ "$stderr" == *"only 2 of 4 replicas placed"* ]]
	run -0 ctl object put one "$MC_DIR/data/f" --replicas 2
	[ "$output" = "stored 'one' (1000 bytes)" ]
}
