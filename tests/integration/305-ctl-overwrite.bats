#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# `mooncakectl object put --overwrite` is atomic for readers: one process
# loops `object get KEY` while another overwrites KEY many times with
# values of different sizes.  Every get must answer one whole value that
# was written (never REPLICA_IS_NOT_READY, never OBJECT_NOT_FOUND, never a
# mix), and they must see the value change.
bats_require_minimum_version 1.5.0

load helpers

setup() {
	mc_init
	[ -x "$NODE" ] && [ -x "$CTL" ] || skip "mooncake-node / mooncakectl not built"
	# Short leases: the old values' space comes back quickly.
	start_master --lease_ttl_ms=500 --write_grant_ttl_ms=500
	start_node ow --segment_size=128M
}

teardown() {
	touch "$MC_DIR/writes.done"   # the reader stops, whatever happened
	[ -z "${READER:-}" ] || wait "$READER" || true
	stop_all
}

# value N SIZE: a file whose bytes say which value it is.
value() {
	yes "value $1 of $2 bytes" | head -c "$2" >"$MC_DIR/v$1"
	sha256sum <"$MC_DIR/v$1" | cut -d' ' -f1 >>"$MC_DIR/written"
}

@test "put --overwrite: a reader looping get sees one whole value every time, old or new" {
	local n=40 i
	value 0 100000
	run -0 ctl object put ow-key "$MC_DIR/v0"
	for i in $(seq 1 $n); do value "$i" $(((i * 7919) % 3000000 + 1)); done
	(
		while [ ! -e "$MC_DIR/writes.done" ]; do
			if ctl object get ow-key "$MC_DIR/got" >/dev/null 2>"$MC_DIR/get.err"; then
				sha256sum <"$MC_DIR/got" | cut -d' ' -f1 >>"$MC_DIR/seen"
			else
				echo "get failed (exit $?): $(cat "$MC_DIR/get.err")" >>"$MC_DIR/reader.err"
			fi
		done
	) 3>&- &
	READER=$!
	local v want
	for v in $(seq 1 $n); do
		want="stored 'ow-key' ($(stat -c %s "$MC_DIR/v$v") bytes)"   # (run clobbers $i)
		run -0 ctl object put --overwrite ow-key "$MC_DIR/v$v"
		[ "$output" = "$want" ] || { echo "put $v: $output"; false; }
	done
	touch "$MC_DIR/writes.done"
	wait "$READER"
	[ ! -s "$MC_DIR/reader.err" ] || { head -n 5 "$MC_DIR/reader.err"; false; }
	# Every get was one of the values written, whole.
	local bad
	bad=$(grep -vxFf "$MC_DIR/written" "$MC_DIR/seen" | head -n 3)
	[ -z "$bad" ] || { echo "read bytes of no value: $bad"; false; }
	echo "# $(wc -l <"$MC_DIR/seen") gets, $(sort -u "$MC_DIR/seen" | wc -l) distinct values" >&3
	[ "$(wc -l <"$MC_DIR/seen")" -ge 10 ]
	[ "$(sort -u "$MC_DIR/seen" | wc -l)" -ge 3 ]   # they saw it change
	# The last value is the one readers get now.
	run -0 ctl object get ow-key "$MC_DIR/last"
	cmp "$MC_DIR/v$n" "$MC_DIR/last"
}

@test "put --overwrite that fails leaves the old value" {
	value 0 5000
	run -0 ctl object put ow-fail "$MC_DIR/v0"
	# Larger than the whole cache: refused, and the key keeps its value.
	head -c 200M /dev/zero >"$MC_DIR/huge"
	run ctl object put --overwrite ow-fail "$MC_DIR/huge"
	[ "$status" -ne 0 ]
	[[ "$output" == *NO_AVAILABLE_HANDLE* ]] || { echo "$output"; false; }
	run -0 ctl object get ow-fail "$MC_DIR/got"
	cmp "$MC_DIR/v0" "$MC_DIR/got"
}
