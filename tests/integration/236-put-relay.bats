#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# A put in one client round trip (issue 14, proto.def DATA_PUT and
# BATCH_NODE_PUT_START): the client sends a small put to the node of a
# segment whose PUT grant it holds; the node starts it at the master on
# that segment, copies it in and ends it.  Concurrent relayed puts read
# back byte for byte, the grant and the placement rules, the fallbacks.
bats_require_minimum_version 1.5.0

load helpers

setup() {
	mc_init
	[ -x "$NODE" ] && [ -x "$RPC" ] || skip "daemons or mc-rpc not built"
	export MC_DISABLE_SHM=1
}

teardown() {
	stop_all
}

req() { master_metric "mooncake_master_rpc_requests_total{op=\"$1\"}"; }

# pgrant KEY: starts KEY (a throwaway put) asking for a PUT grant; sets
# EP, SEG, PGRANT (and RGRANT, the WRITE grant of that put's block).
pgrant() {
	run -0 "$RPC" "$MASTER_ADDR" pgrant "$1" 4096 7
	[[ "$output" == OK* ]]
	PGRANT=$(sed 's/.* pgrant=\([0-9a-f]*\).*/\1/' <<<"$output")
	IFS=, read -r EP SEG _ _ RGRANT <<<"$(sed 's/.* rep=//' <<<"$output")"
	[ -n "$PGRANT" ] && [ -n "$SEG" ]
}

@test "8 threads relay their puts through the node: every acknowledged put is readable" {
	start_master
	start_node n1 --segment_size=128M --workers=2
	mkdir -p "$MC_DIR/load"
	MC_PUT_RELAY=1 run -0 "$O/tests/tools/mc-load" run "$MASTER_ADDR" "$MC_DIR/load" 3 8 200
	verify_load
	local relays starts ps
	relays=$(node_metric n1 mooncake_node_put_relays_total)
	starts=$(node_metric n1 mooncake_node_put_relay_start_batches_total)
	ps=$(req put_start)
	echo "# $relays relayed puts in $starts BATCH_NODE_PUT_START calls; $ps PUT_STARTs" >&3
	[ "$relays" -gt 100 ]
	[ "$starts" -le "$relays" ]
	[ "$ps" -lt "$relays" ]                   # most puts never asked the master themselves
	[ "$(node_metric n1 mooncake_node_put_ends_failed_total)" = 0 ]
	[ "$(node_metric n1 mooncake_node_put_relays_busy_total)" = 0 ]
}

@test "a relayed put lands where the grant says, byte for byte, and is durable on the master" {
	start_master
	start_node n1 --segment_size=64M
	pgrant seed
	run -0 "$RPC" "$EP" relay "$SEG" "$PGRANT" 7 r1 4096 0x5a
	[ "$output" = OK ]
	run -0 "$RPC" "$MASTER_ADDR" where r1
	[[ "$output" == "OK size=4096"* ]]
	IFS=, read -r ep seg off len rg <<<"$(sed 's/.* rep=//' <<<"$output")"
	[ "$seg" = "$SEG" ] && [ "$len" = 4096 ]
	run -0 "$RPC" "$ep" read "$seg" "$off" 16 "$rg"
	[ "$output" = "OK bytes=16 hex=5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a" ]
	# an existing key: the master says so, the bytes stay
	run -0 "$RPC" "$EP" relay "$SEG" "$PGRANT" 7 r1 4096 0x11
	[ "$output" = OBJECT_ALREADY_EXISTS ]
	run -0 "$RPC" "$ep" read "$seg" "$off" 16 "$rg"
	[ "$output" = "OK bytes=16 hex=5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a" ]
	# the end was logged: a master restarted from its oplog still has it
	restart_master
	for i in $(seq 1 100); do                       # until the node has remounted
		run -0 "$RPC" "$MASTER_ADDR" get r1
		[[ "$output" == "OK size=4096"* ]] && break
		sleep 0.1
	done
	[[ "$output" == "OK size=4096"* ]]
}

@test "the node refuses a relay without a PUT grant of its segment and tenant, or too large" {
	start_master
	start_node n1 --segment_size=64M
	pgrant seed
	run -0 "$RPC" "$EP" relay "$SEG" - 7 d1 4096
	[ "$output" = GRANT_DENIED ]
	run -0 "$RPC" "$EP" relay "$SEG" "$RGRANT" 7 d2 4096      # a WRITE grant: wrong mode
	[ "$output" = GRANT_DENIED ]
	run -0 "$RPC" "$EP" relay "$SEG" "$PGRANT" 7 d3 4096 0x41 t2   # another tenant's put
	[ "$output" = GRANT_DENIED ]
	run -0 "$RPC" "$EP" relay "$SEG" "$PGRANT" 7 d4 262145   # over MC_PROTO_MAX_RELAY
	[ "$output" = TOO_LARGE ]
	run -0 "$RPC" "$EP" relay "$SEG" "$PGRANT" 7 d5 0
	[ "$output" = INVALID_PARAMS ]
	for k in d1 d2 d3 d4 d5; do
		run -0 "$RPC" "$MASTER_ADDR" get "$k"
		[[ "$output" == OBJECT_NOT_FOUND* ]]           # nothing started
	done
	[ "$(node_metric n1 mooncake_node_put_relays_total)" = 0 ]
	[ "$(req batch_node_put_start)" = 0 ]
	# the connection is still good
	run -0 "$RPC" "$EP" relay "$SEG" "$PGRANT" 7 d6 1
	[ "$output" = OK ]
}

@test "the master starts a node's relayed put only on a segment of that node, and only there" {
	start_master
	run -0 "$RPC" "$MASTER_ADDR" mount 9 1 s9 1048576
	run -0 "$RPC" "$MASTER_ADDR" mount 10 2 s10 67108864
	seg9=$(printf '%016x%016x' 0x6d632d727063 1)
	run -0 "$RPC" "$MASTER_ADDR" node_start 9 7 m1 4096 "$seg9"
	[[ "$output" == "OK item=OK offset="* ]]
	run -0 "$RPC" "$MASTER_ADDR" node_start 10 7 m2 4096 "$seg9"   # not node 10's
	[ "$output" = "OK item=ILLEGAL_CLIENT" ]
	run -0 "$RPC" "$MASTER_ADDR" node_start 9 7 m3 4096 "$(printf '%032x' 77)"
	[ "$output" = "OK item=SEGMENT_NOT_FOUND" ]
	# no room on that segment: nowhere, though segment 2 has room
	run -0 "$RPC" "$MASTER_ADDR" node_start 9 7 m4 2097152 "$seg9"
	[ "$output" = "OK item=NO_AVAILABLE_HANDLE" ]
	for k in m2 m3 m4; do
		run -0 "$RPC" "$MASTER_ADDR" get "$k"
		[[ "$output" == OBJECT_NOT_FOUND* ]]
	done
	run -0 "$RPC" "$MASTER_ADDR" get m1
	[[ "$output" == REPLICA_IS_NOT_READY* ]]          # started, not ended
}

@test "a node that does not end puts answers NOT_SUPPORTED; the client puts the usual way" {
	start_master
	start_node n1 --segment_size=128M --end_puts=false
	pgrant seed
	run -0 "$RPC" "$EP" relay "$SEG" "$PGRANT" 7 n1 4096
	[ "$output" = NOT_SUPPORTED ]
	mkdir -p "$MC_DIR/load"
	MC_PUT_RELAY=1 run -0 "$O/tests/tools/mc-load" run "$MASTER_ADDR" "$MC_DIR/load" 2 4 200
	verify_load
	[ "$(node_metric n1 mooncake_node_put_relays_total)" = 0 ]
	[ "$(req put_start)" -gt 10 ]
}
