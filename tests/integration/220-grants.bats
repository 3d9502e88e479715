#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Granted data ranges, written as the attacks: a raw DATA_READ / DATA_WRITE
# of ranges the master never granted (another tenant's object, the whole
# segment, free space), a grant stretched to a neighbouring range, a write
# grant used to read, an expired grant, DATA_STAT without a stat grant.
# Each is refused with GRANT_DENIED / GRANT_EXPIRED, counted in the node's
# /metrics, and the owner still reads its bytes intact.
bats_require_minimum_version 1.5.0

load helpers

setup() {
	mc_init
}

teardown() {
	stop_all
}

# rep_of LINE N: the N-th (1-based) "rep=" field of an mc-rpc line.
rep_of() {
	tr ' ' '\n' <<<"$1" | sed -n 's/^rep=//p' | sed -n "${2}p"
}

# refusals REASON: the node n1's counter of grant refusals for REASON.
refusals() {
	local http
	http=$(sed -n 's/.*http on \([^ ,]*\),.*/\1/p' "$MC_DIR/node-n1.log" | tail -n1)
	curl -sf "http://$http/metrics" |
		sed -n "s/^mooncake_node_grant_refusals_total{reason=\"$1\"} \([0-9]*\)$/\1/p"
}

@test "raw DATA_READ and DATA_WRITE of ungranted ranges are refused and counted" {
	start_master
	start_node n1
	head -c 5000 /dev/urandom >"$MC_DIR/data/secret"
	MOONCAKE_TENANT= run -0 "$CTL" --rpc "$MASTER_ADDR" --tenant B object put secret "$MC_DIR/data/secret"
	# the attacker learns where the bytes are (or guesses: ids are in the master's REST)
	run -0 "$RPC" "$MASTER_ADDR" where secret B
	rep=$(rep_of "$output" 1)
	IFS=, read -r ep seg off len grant <<<"$rep"
	[ "$len" = 5000 ]
	[ "$grant" != - ]
	# no grant: the object, the whole segment, free space
	run -0 "$RPC" "$ep" read "$seg" "$off" "$len"
	[ "$output" = GRANT_DENIED ]
	run -0 "$RPC" "$ep" read "$seg" 0 $((16 << 20))
	[ "$output" = GRANT_DENIED ]
	run -0 "$RPC" "$ep" write "$seg" "$off" "$len"
	[ "$output" = GRANT_DENIED ]
	run -0 "$RPC" "$ep" write "$seg" $((8 << 20)) 4096
	[ "$output" = GRANT_DENIED ]
	[ "$(refusals missing)" -ge 4 ]
	# a forged grant: the MAC of another range
	bad=${grant:0:64}$(printf '%02x' $(( (16#${grant:64:2} + 1) % 256 )))${grant:66}
	run -0 "$RPC" "$ep" read "$seg" "$off" "$len" "$bad"
	[ "$output" = GRANT_DENIED ]
	[ "$(refusals bad_mac)" -ge 1 ]
	# the genuine read grant: its own range, and not one byte more
	run -0 "$RPC" "$ep" read "$seg" "$off" "$len" "$grant"
	[[ "$output" == "OK bytes=5000 hex=$(head -c 16 "$MC_DIR/data/secret" | od -An -tx1 | tr -d ' \n')" ]]
	run -0 "$RPC" "$ep" read "$seg" $((off + 1)) "$len" "$grant"
	[ "$output" = GRANT_DENIED ]
	run -0 "$RPC" "$ep" read "$seg" $((off + len)) 4096 "$grant"
	[ "$output" = GRANT_DENIED ]
	[ "$(refusals out_of_range)" -ge 2 ]
	# nor another segment id with it
	run -0 "$RPC" "$ep" read 00000000000000000000000000000001 "$off" "$len" "$grant"
	[ "$output" = GRANT_DENIED ]
	# DATA_STAT: for the master and the node's tooling, not for clients
	run -0 "$RPC" "$ep" stat
	[ "$output" = GRANT_DENIED ]
	run -0 "$RPC" "$ep" stat "$grant"
	[ "$output" = GRANT_DENIED ]
	# the owner's bytes are intact
	run -0 "$CTL" --rpc "$MASTER_ADDR" --tenant B object get secret "$MC_DIR/data/secret.out"
	cmp "$MC_DIR/data/secret" "$MC_DIR/data/secret.out"
}

@test "a write grant used for reading is refused; it writes its own range only" {
	start_master
	start_node n1
	run -0 "$RPC" "$MASTER_ADDR" put_start wkey 4096 7
	rep=$(rep_of "$output" 1)
	IFS=, read -r ep seg off len grant <<<"$rep"
	run -0 "$RPC" "$ep" read "$seg" "$off" "$len" "$grant"
	[ "$output" = GRANT_DENIED ]
	[ "$(refusals wrong_mode)" -ge 1 ]
	run -0 "$RPC" "$ep" write "$seg" "$off" "$len" "$grant" 0x42
	[ "$output" = OK ]
	run -0 "$RPC" "$ep" write "$seg" $((off + 4096)) 4096 "$grant"
	[ "$output" = GRANT_DENIED ]
	# and a read grant cannot write
	put_random rkey 3000
	run -0 "$RPC" "$MASTER_ADDR" where rkey
	IFS=, read -r ep seg off len grant <<<"$(rep_of "$output" 1)"
	run -0 "$RPC" "$ep" write "$seg" "$off" "$len" "$grant"
	[ "$output" = GRANT_DENIED ]
	get_compare rkey
}

@test "an expired read grant is refused" {
	start_master --lease_ttl_ms=2000
	start_node n1
	put_random k 2048
	run -0 "$RPC" "$MASTER_ADDR" where k
	IFS=, read -r ep seg off len grant <<<"$(rep_of "$output" 1)"
	run -0 "$RPC" "$ep" read "$seg" "$off" "$len" "$grant"
	[[ "$output" == "OK bytes=2048 "* ]]
	sleep 2.5
	run -0 "$RPC" "$ep" read "$seg" "$off" "$len" "$grant"
	[ "$output" = GRANT_EXPIRED ]
	[ "$(refusals expired)" -ge 1 ]
	# a fresh get gives a fresh grant
	get_compare k
}

@test "grants signed before a master restart are refused; new ones work" {
	local port
	port=$(free_port)
	start_master --rpc_port="$port"
	start_node n1
	put_random k 1000
	run -0 "$RPC" "$MASTER_ADDR" where k
	IFS=, read -r ep seg off len grant <<<"$(rep_of "$output" 1)"
	kill -KILL "$MASTER_PID"
	wait "$MASTER_PID" 2>/dev/null || true
	start_master --rpc_port="$port"
	# the node remounts (NEED_REMOUNT): new key; the old one stays as the previous
	for i in $(seq 1 100); do
		[ "$(grep -c 'mounted' "$MC_DIR/node-n1.log")" -ge 2 ] && break
		sleep 0.05
	done
	[ "$(grep -c 'mounted' "$MC_DIR/node-n1.log")" -ge 2 ]
	get_compare k
	# a grant from the old master's key, forged on a new key id, is refused
	bad=${grant:0:8}00000000${grant:16}
	run -0 "$RPC" "$ep" read "$seg" "$off" "$len" "$bad"
	[ "$output" = GRANT_DENIED ]
}

@test "a writer that removes its own object cannot write into the next object placed there" {
	start_master --write_grant_ttl_ms=5000
	start_node n1
	local t0
	t0=$(date +%s%N)
	run -0 "$RPC" "$MASTER_ADDR" put_start mine 4096 7
	IFS=, read -r ep seg off len grant <<<"$(rep_of "$output" 1)"
	run -0 "$RPC" "$ep" write "$seg" "$off" 4096 "$grant" 0x42
	[ "$output" = OK ]
	run -0 "$RPC" "$MASTER_ADDR" put_end mine 7
	[ "$output" = OK ]
	run -0 "$RPC" "$MASTER_ADDR" remove mine
	[ "$output" = OK ]
	# the victim's object: not on the blocks the old write grant covers
	put_random victim 4096
	run -0 "$RPC" "$MASTER_ADDR" where victim
	IFS=, read -r _ _ voff _ _ <<<"$(rep_of "$output" 1)"
	[ "$voff" != "$off" ]
	# the old grant still writes its old range, and the victim is intact
	run -0 "$RPC" "$ep" write "$seg" "$off" 4096 "$grant" 0x43
	[ "$output" = OK ]
	get_compare victim
	# once the grant has expired, the range is reused and the grant refused
	sleep "$(awk -v t="$(($(date +%s%N) - t0))" 'BEGIN { s = 5.3 - t / 1e9; print (s > 0 ? s : 0) }')"
	run -0 "$RPC" "$ep" write "$seg" "$off" 4096 "$grant" 0x44
	[ "$output" = GRANT_EXPIRED ]
	get_compare victim
}
