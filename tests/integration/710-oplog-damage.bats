#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# A damaged oplog (a bad record with valid records after it) is no torn
# write: the master refuses to start, changes nothing and says where and
# what to run; `mooncake-master --repair` lists what a cut drops and
# changes nothing, `--repair --yes` cuts (keeping a copy).  A real torn
# tail (the last record cut short) is still cut by the master itself.
bats_require_minimum_version 1.5.0

load helpers

setup() {
	mc_init
	[ -x "$NODE" ] && [ -x "$CTL" ] || skip "mooncake-node / mooncakectl not built"
	OPLOG=$MC_DIR/master/oplog
}

teardown() {
	stop_all
}

# put_n_and_kill N: N objects k1..kN (512 bytes), then kill -9 the master.
put_n_and_kill() {
	local i
	start_master --snapshot_interval_s=0
	start_node n1
	head -c 512 /dev/urandom >"$MC_DIR/obj"
	for i in $(seq 1 "$1"); do
		ctl object put "k$i" "$MC_DIR/obj" >/dev/null || return 1
	done
	kill -KILL "$MASTER_PID"
	_mc_reap "$MASTER_PID" || _mc_reap "$MASTER_PID" || _mc_reap "$MASTER_PID"
}

# record_offset FILE N: the byte offset of record N (1-based) in an oplog file.
record_offset() {
	python3 -c "
import struct, sys
b = open(sys.argv[1], 'rb').read()
o, n = 64, int(sys.argv[2])
for _ in range(n - 1):
    o += 24 + struct.unpack_from('<I', b, o)[0]
print(o)" "$1" "$2"
}

# master_once [opts]: the master in the foreground, for a start that must fail.
master_once() {
	timeout 20 "$MASTER" --rpc_address=127.0.0.1 --rpc_port=0 --http_address=127.0.0.1 \
		--http_port=0 --state_dir="$MC_DIR/master" "$@" </dev/null
}

@test "4 flipped bytes in record 1: the master refuses, --repair lists, --repair --yes cuts" {
	put_n_and_kill 100
	local f name off before
	f=$(ls "$OPLOG"/*.log | head -n1)
	name=$(basename "$f")
	[ "$(ls "$OPLOG"/*.log | wc -l)" -eq 1 ]
	off=$(record_offset "$f" 1)
	[ "$off" -eq 64 ]
	python3 -c "
import sys
b = bytearray(open(sys.argv[1], 'rb').read())
for i in range(4): b[64 + 24 + i] ^= 0xff
open(sys.argv[1], 'wb').write(b)" "$f"
	before=$(sha256sum "$f")

	# refuses to start, says where and what to run, changes nothing
	run -1 master_once
	echo "$output"
	[[ "$output" == *"oplog in $OPLOG is damaged, refusing to start"* ]]
	[[ "$output" == *"$name, byte offset 64"* ]]
	[[ "$output" == *"records from seq 1 on"* ]]
	[[ "$output" == *"valid ones, up to seq"* ]]
	[[ "$output" == *"mooncake-master --repair"* ]]
	[ "$(sha256sum "$f")" = "$before" ]
	[ -z "$(ls -d "$OPLOG"/damaged-* 2>/dev/null)" ]

	# the dry run lists every object record a cut drops, changes nothing
	run -0 "$MASTER" --repair --state_dir="$MC_DIR/master"
	echo "$output"
	[[ "$output" == *"DAMAGED: $name, byte offset 64: bad checksum of record 1"* ]]
	[[ "$output" == *"kept: no record"* ]]
	local k
	for k in 1 50 100; do
		grep -Eq "^  seq [0-9]+ +OBJECT +default/k$k \(512 bytes\)$" <<<"$output"
	done
	[[ "$output" == *"OBJECT 100"* ]]
	[[ "$output" == *"Nothing was changed"* ]]
	[[ "$output" == *"--repair --yes"* ]]
	[ "$(sha256sum "$f")" = "$before" ]

	# --yes alone is a usage error
	run -2 "$MASTER" --yes --state_dir="$MC_DIR/master"

	# the repair: a copy of what goes, then the cut
	cp "$f" "$MC_DIR/orig.log"
	run -0 "$MASTER" --repair --yes --state_dir="$MC_DIR/master"
	echo "$output"
	[[ "$output" == *"REPAIRED: $name: offset 64"* ]]
	local copy
	copy=$(ls -d "$OPLOG"/damaged-*)
	cmp "$copy/$name.from-64" <(tail -c +65 "$MC_DIR/orig.log")
	[ "$(stat -c %s "$f")" -eq 64 ]
	cmp "$f" <(head -c 64 "$MC_DIR/orig.log")

	# now the master starts, with what the log kept (nothing), and serves
	start_master --snapshot_interval_s=0
	grep -q 'recovered 0 objects' "$MC_DIR/master.log"
	run -1 "$MASTER" --repair --state_dir="$MC_DIR/master"
	[[ "$output" == *"the oplog is open elsewhere (stop the master first)"* ]]
}

@test "a truncated last record is a torn tail: cut automatically, the rest recovers" {
	put_n_and_kill 10
	local f
	f=$(ls "$OPLOG"/*.log | tail -n1)
	truncate -s -7 "$f"
	run -0 "$MASTER" --repair --state_dir="$MC_DIR/master"
	[[ "$output" == *"TORN TAIL:"*"nothing valid after it"* ]]
	start_master --snapshot_interval_s=0
	grep -q 'oplog: cut a torn tail' "$MC_DIR/master.log"
	grep -q 'recovered 9 objects' "$MC_DIR/master.log"
	for i in 1 5 9; do ctl object get "k$i" "$MC_DIR/out" && cmp "$MC_DIR/obj" "$MC_DIR/out"; done
	run ctl object get k10 "$MC_DIR/out"
	[ "$status" -ne 0 ]
}
