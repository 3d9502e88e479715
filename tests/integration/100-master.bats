#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# mooncake-master as a real process on loopback: options, config file,
# HELLO/PING and a put/get through the binary RPC (tests/tools/mc-rpc),
# client expiry, SIGTERM.
bats_require_minimum_version 1.5.0

load helpers

setup() {
	mc_init
	STATE=$MC_DIR/master
}

teardown() {
	stop_all
}

@test "--help lists every option with its default and exits 0" {
	run "$MASTER" --help
	[ "$status" -eq 0 ]
	for o in rpc_address rpc_port http_address http_port state_dir lease_ttl_ms client_ttl_ms \
		put_discard_timeout_ms put_release_timeout_ms eviction_high_watermark \
		eviction_low_watermark snapshot_interval_s snapshot_retain oplog \
		admin_token_file workers log_level config; do
		[[ "$output" == *"--$o="* ]] || { echo "missing $o"; false; }
	done
	[[ "$output" == *"default: 50051"* ]]
	# no option is accepted that does nothing: the reserved ones are gone
	# until they work
	[[ "$output" != *"reserved"* ]]
	for o in etcd_endpoints cluster_id etcd_lease_ttl_s; do
		[[ "$output" == *"--$o="* ]] || { echo "missing $o"; false; }
	done
	for o in soft_pin_ttl_ms; do
		run -2 "$MASTER" --$o=1
		[[ "$output" == *"unknown option '--$o'"* ]]
	done
	run -2 "$MASTER" --oplog=zookeeper
	[[ "$output" == *"expected local, etcd or off"* ]]
}

@test "an unknown option exits 2 and names it" {
	run -2 "$MASTER" --no-such-option=1
	[[ "$output" == *"no-such-option"* ]]
	run -2 "$MASTER" stray
	[[ "$output" == *"stray"* ]]
}

@test "a bad value is refused, naming the option" {
	run -2 "$MASTER" --rpc_port=http
	[[ "$output" == *"rpc_port"* ]]
	run -2 "$MASTER" --workers=0
	[[ "$output" == *"workers"* ]]
	run -2 "$MASTER" --oplog=tape
	[[ "$output" == *"oplog"* ]]
	run -2 "$MASTER" --lease_ttl_ms=soon
	[[ "$output" == *"lease_ttl_ms"* ]]
	run -2 "$MASTER" --eviction_low_watermark=0.95
	[[ "$output" == *"eviction_low_watermark"* ]]
	run -2 "$MASTER" --log_level=loud
	[[ "$output" == *"log_level"* ]]
}

@test "the config file is read, flags win, bad keys are refused" {
	conf=$BATS_TEST_TMPDIR/master.conf
	printf '[master]\nworkers = 0\n' >"$conf"
	run -2 "$MASTER" --config "$conf"
	[[ "$output" == *"workers"* ]]
	printf 'bogus_key = 1\n' >"$conf"
	run -2 "$MASTER" --config "$conf"
	[[ "$output" == *"bogus_key"* ]]
	printf 'workers = 0\nclient_ttl_ms = 5s\n' >"$conf"
	start_master --config "$conf" --workers=3
	grep -q '3 workers' "$MC_DIR/master.log"
	run -0 "$RPC" "$MASTER_ADDR" hello
	[[ "$output" == "OK proto_version=1"* ]]
}

@test "the master starts, creates state_dir and answers HELLO and PING" {
	[ ! -e "$STATE" ]
	start_master
	[ -d "$STATE" ]
	run -0 "$RPC" "$MASTER_ADDR" hello
	[[ "$output" == "OK proto_version=1 server_version="* ]]
	run -0 "$RPC" "$MASTER_ADDR" hello 7
	[ "$output" = "INVALID_VERSION" ]
	run -0 "$RPC" "$MASTER_ADDR" ping 1
	[[ "$output" == "OK client_status=NEED_REMOUNT"* ]]
	run -0 "$RPC" "$MASTER_ADDR" mount 1 100 seg-a 67108864
	[ "$output" = "OK" ]
	run -0 "$RPC" "$MASTER_ADDR" ping 1
	[[ "$output" == "OK client_status=OK"* ]]
	run -0 "$RPC" "$MASTER_ADDR" op 0x7777
	[ "$output" = "NOT_SUPPORTED" ]
}

@test "put, get, exist and remove through the master" {
	start_master
	run -0 "$RPC" "$MASTER_ADDR" put k1 4096 1
	[ "$output" = "NO_AVAILABLE_HANDLE" ]
	run -0 "$RPC" "$MASTER_ADDR" mount 1 100 seg-a 67108864
	run -0 "$RPC" "$MASTER_ADDR" put k1 4096 1
	[ "$output" = "OK replicas=1 put_end=OK" ]
	run -0 "$RPC" "$MASTER_ADDR" put k1 4096 1
	[[ "$output" == "OBJECT_ALREADY_EXISTS"* ]]
	run -0 "$RPC" "$MASTER_ADDR" exist k1
	[ "$output" = "OK exists=1" ]
	run -0 "$RPC" "$MASTER_ADDR" get k1
	[ "$output" = "OK size=4096 replicas=1 endpoint=127.0.0.1:50061" ]
	run -0 "$RPC" "$MASTER_ADDR" remove k1
	[ "$output" = "OBJECT_HAS_LEASE" ]
	run -0 "$RPC" "$MASTER_ADDR" unmount 2 100
	[ "$output" = "ILLEGAL_CLIENT" ]
	run -0 "$RPC" "$MASTER_ADDR" unmount 1 100
	[ "$output" = "OK" ]
	run -0 "$RPC" "$MASTER_ADDR" get k1
	[ "$output" = "OBJECT_NOT_FOUND" ]
}

@test "a silent client is expired: its segments unmounted, NEED_REMOUNT" {
	start_master --client_ttl_ms=1000
	run -0 "$RPC" "$MASTER_ADDR" mount 4 400 seg-e 67108864
	run -0 "$RPC" "$MASTER_ADDR" put ek 100 4
	[ "$output" = "OK replicas=1 put_end=OK" ]
	sleep 2.5
	run -0 "$RPC" "$MASTER_ADDR" ping 4
	[[ "$output" == "OK client_status=NEED_REMOUNT"* ]]
	run -0 "$RPC" "$MASTER_ADDR" get ek
	[ "$output" = "OBJECT_NOT_FOUND" ]
}

@test "a port in use is an error naming the address" {
	start_master
	run ! timeout 5 "$MASTER" --rpc_address=127.0.0.1 --rpc_port="${MASTER_ADDR##*:}" --state_dir="$STATE-2" --http_port=0 3>&-
	[[ "$output" == *"127.0.0.1:${MASTER_ADDR##*:}"* ]] || [[ "$output" == *"in use"* ]]
}

@test "SIGTERM stops the master quickly with exit 0" {
	start_master
	run -0 "$RPC" "$MASTER_ADDR" hello
	start=$(date +%s%N)
	kill -TERM "$MASTER_PID"
	rc=0
	wait "$MASTER_PID" || rc=$?
	end=$(date +%s%N)
	[ "$rc" -eq 0 ]
	[ $(( (end - start) / 1000000 )) -lt 2000 ]
	grep -q 'stopping' "$MC_DIR/master.log"
	run ! "$RPC" "$MASTER_ADDR" hello
}

@test "a second master on the same state_dir is refused" {
	start_master
	run ! timeout 5 "$MASTER" --rpc_address=127.0.0.1 --rpc_port=0 --http_port=0 --state_dir="$STATE" 3>&-
	[[ "$output" == *oplog* ]]
}
