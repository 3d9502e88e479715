#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# mooncake-node as a real process with a real master on loopback: options,
# mount (a PUT_START lands on the node's segment), TTL expiry after kill -9,
# remount after a master restart, identity and shm reuse across restarts,
# SIGTERM unmounts, garbage on the data port.
bats_require_minimum_version 1.5.0

load helpers

setup() {
	cd "$BATS_TEST_DIRNAME/../.."
	O=${MC_BUILD:-$PWD/.output}
	MASTER=$O/bin/mooncake-master
	NODE=$O/bin/mooncake-node
	RPC=$O/tests/tools/mc-rpc
	MSTATE=$BATS_TEST_TMPDIR/mstate
	NSTATE=$BATS_TEST_TMPDIR/nstate
	mpid= npid=
}

teardown() {
	local p rc=0
	for p in $npid $mpid; do
		mc_stop_pid "$p"
	done
	remove_shm
	mc_check_sanitizer "$BATS_TEST_TMPDIR"/*.log || rc=1
	return $rc
}

remove_shm() {
	local f id
	for f in "$NSTATE"/node.id "$BATS_TEST_TMPDIR"/*/node.id; do
		[ -f "$f" ] || continue
		for id in $(awk '$1 == "segment" { print $2 }' "$f"); do
			rm -f "/dev/shm/mooncake-$id"
		done
	done
}

# start_master_on PORT [options]: appends to master.log; sets $mpid and $ADDR.
start_master_on() {
	local want=$1
	shift
	"$MASTER" --rpc_address=127.0.0.1 --rpc_port="$want" --http_port=0 --state_dir="$MSTATE" \
		--client_ttl_ms=1500 "$@" 2>>"$BATS_TEST_TMPDIR/master.log" 3>&- &
	mpid=$!
	local i port
	for i in $(seq 1 100); do
		port=$(sed -n 's/.*ready: rpc on 127\.0\.0\.1:\([0-9]*\),.*/\1/p' "$BATS_TEST_TMPDIR/master.log" | tail -n1)
		if [ -n "$port" ] && { [ "$want" = 0 ] || [ "$port" = "$want" ]; }; then
			ADDR=127.0.0.1:$port
			return 0
		fi
		kill -0 "$mpid" 2>/dev/null || break
		sleep 0.05
	done
	cat "$BATS_TEST_TMPDIR/master.log" >&2
	return 1
}

# start_tnode [options]: sets $npid and $DADDR once it has mounted (what an
# earlier node wrote in node.log goes to node.earlier.log).
start_tnode() {
	_mc_new_log "$BATS_TEST_TMPDIR/node.log"
	"$NODE" --master="$ADDR" --data_address=127.0.0.1 --data_port=0 --http_port=0 --segment_size=16M \
		--state_dir="$NSTATE" --name=tnode "$@" 2>"$BATS_TEST_TMPDIR/node.log" 3>&- &
	npid=$!
	local i port
	for i in $(seq 1 100); do
		port=$(sed -n 's/.*ready: data on 127\.0\.0\.1:\([0-9]*\),.*/\1/p' "$BATS_TEST_TMPDIR/node.log")
		if [ -n "$port" ] && grep -q 'mounted' "$BATS_TEST_TMPDIR/node.log"; then
			DADDR=127.0.0.1:$port
			return 0
		fi
		kill -0 "$npid" 2>/dev/null || break
		sleep 0.05
	done
	cat "$BATS_TEST_TMPDIR/node.log" >&2
	return 1
}

seg_ids() {
	awk '$1 == "segment" { print $2 }' "$NSTATE/node.id"
}

@test "node --help lists every option; unknown option and bad values exit 2" {
	run -0 "$NODE" --help
	for o in master name data_address data_port http_port segment_size segments state_dir \
		workers log_level config; do
		[[ "$output" == *"--$o="* ]] || { echo "missing $o"; false; }
	done
	[[ "$output" == *"default: 50061"* ]]
	[[ "$output" != *"reserved"* ]]
	run -2 "$NODE" --no-such-option=1
	[[ "$output" == *"no-such-option"* ]]
	run -2 "$NODE" --segment_size=lots
	[[ "$output" == *"segment_size"* ]]
	run -2 "$NODE" --segments=0
	[[ "$output" == *"segments"* ]]
	run -2 "$NODE" --master=nohostport
	[[ "$output" == *"master"* ]]
}

@test "the node mounts its segments: PUT_START lands on them; the data port answers" {
	start_master_on 0
	run -0 "$RPC" "$ADDR" put k0 4096 9
	[ "$output" = "NO_AVAILABLE_HANDLE" ]
	start_tnode --segments=2
	[ "$(seg_ids | wc -l)" -eq 2 ]
	for id in $(seg_ids); do [ -f "/dev/shm/mooncake-$id" ]; done
	[ "$(stat -c %s /dev/shm/mooncake-$(seg_ids | head -n1))" -eq $((16 << 20)) ]
	# the node's user and group only: the co-located path maps whole segments
	for id in $(seg_ids); do [ "$(stat -c %a "/dev/shm/mooncake-$id")" = 660 ]; done
	run -0 "$RPC" "$ADDR" put k1 4096 9
	[ "$output" = "OK replicas=1 put_end=OK" ]
	run -0 "$RPC" "$ADDR" get k1
	[ "$output" = "OK size=4096 replicas=1 endpoint=$DADDR" ]
	run -0 "$RPC" "$DADDR" hello
	[[ "$output" == "OK proto_version=1"* ]]
	grep -q 'no RDMA device' "$BATS_TEST_TMPDIR/node.log"   # this host has none: TCP only
}

@test "kill -9: after client_ttl_ms the segment is gone; restart reuses the shm files" {
	start_master_on 0
	start_tnode
	id1=$(seg_ids)
	run -0 "$RPC" "$ADDR" put k1 4096 9
	[ "$output" = "OK replicas=1 put_end=OK" ]
	kill -KILL "$npid"
	wait "$npid" || true
	npid=
	sleep 3.5
	run -0 "$RPC" "$ADDR" put k2 4096 9
	[ "$output" = "NO_AVAILABLE_HANDLE" ]
	[ -f "/dev/shm/mooncake-$id1" ]
	start_tnode
	[ "$(seg_ids)" = "$id1" ]
	grep -q '(reused)' "$BATS_TEST_TMPDIR/node.log"
	run -0 "$RPC" "$ADDR" put k2 4096 9
	[ "$output" = "OK replicas=1 put_end=OK" ]
}

@test "the master restarts: the node reconnects and remounts within seconds" {
	start_master_on "$(free_port)"
	start_tnode
	run -0 "$RPC" "$ADDR" put k1 4096 9
	[ "$output" = "OK replicas=1 put_end=OK" ]
	port=${ADDR##*:}
	kill -KILL "$mpid"
	wait "$mpid" || true
	mpid=
	sleep 1.5
	start_master_on "$port"
	ok=
	for i in $(seq 1 60); do
		out=$("$RPC" "$ADDR" put "k$i" 4096 9 || true)
		if [ "$out" = "OK replicas=1 put_end=OK" ]; then ok=1; break; fi
		sleep 0.1
	done
	[ -n "$ok" ]
	kill -0 "$npid"
}

@test "more or fewer segments, a fresh state_dir: new files, stale ones deleted" {
	start_master_on 0
	start_tnode --segments=2
	old=$(seg_ids)
	kill -TERM "$npid"; wait "$npid"; npid=
	start_tnode --segments=1
	[ "$(seg_ids)" = "$(echo "$old" | head -n1)" ]
	[ ! -e "/dev/shm/mooncake-$(echo "$old" | tail -n1)" ]
	kill -TERM "$npid"; wait "$npid"; npid=
	start_tnode --segment_size=32M
	new=$(seg_ids)
	[ "$new" != "$(echo "$old" | head -n1)" ]
	[ ! -e "/dev/shm/mooncake-$(echo "$old" | head -n1)" ]
	[ "$(stat -c %s /dev/shm/mooncake-$new)" -eq $((32 << 20)) ]
}

@test "SIGTERM: the node unmounts and exits 0" {
	start_master_on 0
	start_tnode
	run -0 "$RPC" "$ADDR" put k1 4096 9
	[ "$output" = "OK replicas=1 put_end=OK" ]
	kill -TERM "$npid"
	rc=0
	wait "$npid" || rc=$?
	npid=
	[ "$rc" -eq 0 ]
	grep -q 'unmounted 1 of 1' "$BATS_TEST_TMPDIR/node.log"
	run -0 "$RPC" "$ADDR" put k2 4096 9
	[ "$output" = "NO_AVAILABLE_HANDLE" ]
	run -0 "$RPC" "$ADDR" get k1
	[ "$output" = "OBJECT_NOT_FOUND" ]
	# the shm file stays
	[ -f "/dev/shm/mooncake-$(seg_ids)" ]
}

@test "random bytes and oversize lengths on the data port: the node keeps serving" {
	start_master_on 0
	start_tnode
	port=${DADDR##*:}
	for i in 1 2 3 4 5; do
		head -c 4096 /dev/urandom >"/dev/tcp/127.0.0.1/$port" || true
	done
	# right magic, version 1, DATA_WRITE, body_len 0xffffffff
	printf 'CM\x01\x00\x01\x10\x00\x00\x01\x00\x00\x00\xff\xff\xff\xff\x00\x00\x00\x00\x00\x00\x00\x00' \
		>"/dev/tcp/127.0.0.1/$port" || true
	# DATA_WRITE with an attachment of 2^40 (over the 1 GiB limit)
	printf 'CM\x01\x00\x01\x10\x00\x00\x02\x00\x00\x00\x20\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00' \
		>"/dev/tcp/127.0.0.1/$port" || true
	# a frame that promises 1 MiB of attachment and stops after 10 bytes
	{ printf 'CM\x01\x00\x01\x10\x00\x00\x03\x00\x00\x00\x20\x00\x00\x00\x00\x00\x10\x00\x00\x00\x00\x00'
	  head -c 42 /dev/zero; } >"/dev/tcp/127.0.0.1/$port" || true
	run -0 "$RPC" "$DADDR" hello
	[[ "$output" == "OK proto_version=1"* ]]
	run -0 "$RPC" "$DADDR" stat	# answered: DATA_STAT needs the master's stat grant
	[ "$output" = "GRANT_DENIED" ]
	kill -0 "$npid"
}
