#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# A put whose end travels with its data (issue 14, proto.def DATA_WRITE_END
# and BATCH_NODE_PUT_END): a small put of one memory replica over TCP sends
# its bytes and its end to the node in one request, and the node ends the
# put at the master.  Byte-exact puts that way, the 3-trip way where it
# does not apply (mixed in one cluster), a node killed between its write
# and the end, and who may end whose put.
bats_require_minimum_version 1.5.0

load helpers

setup() {
	mc_init
	[ -x "$NODE" ] && [ -x "$CTL" ] && [ -x "$RPC" ] || skip "daemons, mooncakectl or mc-rpc not built"
	export MC_DISABLE_SHM=1		# the TCP data path: co-located puts would use shm
	export MC_PUT_NODE_END=1	# every put that can (the default: concurrent ones only)
	export MC_PUT_RELAY=0		# not in one round trip (236-put-relay.bats)
}

teardown() {
	stop_all
}

ends() { master_metric 'mooncake_master_rpc_requests_total{op="batch_node_put_end"}'; }
put_ends() { master_metric 'mooncake_master_rpc_requests_total{op="put_end"}'; }

@test "small puts are ended by their node, read back byte for byte" {
	start_master
	start_node n1 --segment_size=64M
	put_random k1 1
	put_random k4 4K
	put_random k100 100K
	put_random k1m 1M
	[ "$(ends)" = 4 ]
	[ "$(put_ends)" = 0 ]
	[ "$(node_metric n1 mooncake_node_put_ends_total)" = 4 ]
	[ "$(node_metric n1 mooncake_node_put_ends_failed_total)" = 0 ]
	put_random kbig 1049577         # over 1 MiB: the 3-trip put
	[ "$(ends)" = 4 ]
	[ "$(put_ends)" = 1 ]
	for k in k1 k4 k100 k1m kbig; do get_compare "$k"; done
	# an existing key: PutStart says so, nothing reaches the node
	run -3 ctl object put k4 "$MC_DIR/data/k4"
	[ "$(node_metric n1 mooncake_node_put_ends_total)" = 4 ]
}

@test "mixed paths: shm, two replicas and MC_PUT_NODE_END=0 take 3 trips beside node-ended puts" {
	start_master
	start_node n1
	start_node n2
	put_random a1 4K                                     # node-ended
	MC_PUT_NODE_END=0 put_random a2 4K                   # the client ends it
	put_random a3 4K --replicas 2                        # two nodes: the client ends it
	MC_DISABLE_SHM=0 put_random a4 4K                    # shared memory: likewise
	put_random a5 8K                                     # node-ended
	[ "$(ends)" = 2 ]
	[ "$(put_ends)" = 3 ]
	for k in a1 a2 a3 a4 a5; do get_compare "$k"; done
	[ "$(ctl --json object stat a3 | jq '.replicas | length')" = 2 ]
}

@test "a node that does not end puts (end_puts=false, as an older node): the client ends them" {
	start_master
	start_node n1 --end_puts=false
	put_random b1 4K
	put_random b2 1
	[ "$(ends)" = 0 ]
	[ "$(put_ends)" = 2 ]
	get_compare b1
	get_compare b2
	run -0 "$RPC" "$MASTER_ADDR" put_start b3 4096 7
	IFS=, read -r ep seg off _ grant <<<"$(sed 's/.* rep=//' <<<"$output")"
	run -0 "$RPC" "$ep" write_end "$seg" "$off" 4096 "$grant" 7 b3
	[[ "$output" == NOT_SUPPORTED* ]]            # its bytes skipped, nothing ended
	run -0 "$RPC" "$MASTER_ADDR" get b3
	[[ "$output" == REPLICA_IS_NOT_READY* ]]
}

@test "a node killed between its write and the end: the put fails, nothing is visible, a retry succeeds" {
	start_master
	MC_TEST_NODE_END_DELAY_MS=60000 start_node n1
	f=$(_mc_file kx)
	head -c 4096 /dev/urandom >"$f"
	ctl object put kx "$f" >"$MC_DIR/put.out" 2>&1 &
	put=$!
	wait_node_metric n1 mooncake_node_put_ends_total 1   # written, its end held
	kill_node n1
	run wait "$put"
	[ "$status" -ne 0 ]
	run -0 "$RPC" "$MASTER_ADDR" get kx
	[[ "$output" == OBJECT_NOT_FOUND* ]]                # revoked: not half-visible
	start_node n1
	put_random kx 4K                                     # the retry
	get_compare kx
	[ "$(ends)" = 1 ]
}

@test "who may end whose put: the grant's range, the put's client, the node holding it" {
	start_master
	start_node n1
	run -0 "$RPC" "$MASTER_ADDR" put_start e1 4096 7
	[[ "$output" == OK* ]]
	IFS=, read -r ep seg off len grant <<<"$(sed 's/.* rep=//' <<<"$output")"
	run -0 "$RPC" "$MASTER_ADDR" put_start e2 4096 7
	IFS=, read -r _ seg2 off2 _ grant2 <<<"$(sed 's/.* rep=//' <<<"$output")"
	# a range the grant does not cover: refused by the node, nothing written
	run -0 "$RPC" "$ep" write_end "$seg" "$((off + 4096))" 4096 "$grant" 7 e1
	[[ "$output" == GRANT_DENIED* ]]
	run -0 "$RPC" "$ep" write_end "$seg" "$off" 4096 - 7 e1
	[[ "$output" == GRANT_DENIED* ]]
	# e1's range and grant naming e2: the master refuses (e2 is elsewhere)
	run -0 "$RPC" "$ep" write_end "$seg" "$off" 4096 "$grant" 7 e2
	[[ "$output" == INVALID_REPLICA* ]]
	# another client's put
	run -0 "$RPC" "$ep" write_end "$seg" "$off" 4096 "$grant" 8 e1
	[[ "$output" == ILLEGAL_CLIENT* ]]
	# a node that does not hold the range
	run -0 "$RPC" "$MASTER_ADDR" node_end 5 7 e1 "$seg" "$off" 4096
	[[ "$output" == "OK item=ILLEGAL_CLIENT"* ]]
	run -0 "$RPC" "$MASTER_ADDR" get e1
	[[ "$output" == REPLICA_IS_NOT_READY* ]]
	# the put's own grant, key and client: written and ended
	run -0 "$RPC" "$ep" write_end "$seg" "$off" 4096 "$grant" 7 e1 0x5a
	[[ "$output" == OK* ]]
	run -0 "$RPC" "$MASTER_ADDR" get e1
	[[ "$output" == "OK size=4096"* ]]
	run -0 "$RPC" "$MASTER_ADDR" where e1
	rgrant=$(sed 's/.* rep=[^,]*,[^,]*,[^,]*,[^,]*,//' <<<"$output")
	run -0 "$RPC" "$ep" read "$seg" "$off" 16 "$rgrant"
	[[ "$output" == "OK bytes=16 hex=5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a" ]]
	# ending it again is fine; e2 still ends the 3-trip way
	run -0 "$RPC" "$ep" write_end "$seg" "$off" 4096 "$grant" 7 e1 0x5a
	[[ "$output" == OK* ]]
	run -0 "$RPC" "$ep" write "$seg2" "$off2" 4096 "$grant2"
	run -0 "$RPC" "$MASTER_ADDR" put_end e2 7
	[[ "$output" == OK* ]]
}

@test "8 threads put through one node: every acknowledged put is readable, none failed" {
	start_master
	start_node n1 --segment_size=128M --workers=2
	mkdir -p "$MC_DIR/load"
	run -0 "$O/tests/tools/mc-load" run "$MASTER_ADDR" "$MC_DIR/load" 3 8 200
	verify_load
	e=$(node_metric n1 mooncake_node_put_ends_total)
	b=$(node_metric n1 mooncake_node_put_end_batches_total)
	echo "# $e ends in $b BATCH_NODE_PUT_END calls" >&3
	[ "$e" -gt 0 ]
	[ "$b" -le "$e" ]
	[ "$(node_metric n1 mooncake_node_put_ends_failed_total)" = 0 ]
	[ "$(put_ends)" = 0 ]
}

@test "by default a lone put is ended by its client, concurrent puts by the node" {
	unset MC_PUT_NODE_END
	start_master
	start_node n1 --segment_size=128M --workers=2
	put_random lone 4K
	run -0 get_compare lone
	[ "$(node_metric n1 mooncake_node_put_ends_total)" = 0 ]
	[ "$(put_ends)" = 1 ]
	mkdir -p "$MC_DIR/load"
	run -0 "$O/tests/tools/mc-load" run "$MASTER_ADDR" "$MC_DIR/load" 3 8 200
	verify_load
	e=$(node_metric n1 mooncake_node_put_ends_total)
	echo "# $e of the load's puts ended by the node" >&3
	[ "$e" -gt 0 ]
	[ "$(node_metric n1 mooncake_node_put_ends_failed_total)" = 0 ]
}
