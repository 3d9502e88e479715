#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# The check every test's teardown relies on: stop_all (helpers.bash) fails
# when a daemon's log holds a sanitizer report, and passes when it holds none.
# With a sanitized build (MC_BUILD=.output-asan) the report is a real one:
# a preloaded object leaks at start, LeakSanitizer reports it as the master
# exits on SIGTERM.
bats_require_minimum_version 1.5.0

load helpers

setup() {
	mc_init
}

teardown() {
	stop_all || true	# the tests call it themselves
}

@test "stop_all passes when no daemon reported anything" {
	start_master
	start_node n1
	run stop_all
	[ "$status" -eq 0 ]
}

@test "stop_all fails when a daemon's log holds a sanitizer report, naming the log" {
	start_master
	start_node n1
	# (once the node is gone: it writes its log at its own offset, over anything added)
	kill_node n1 TERM
	echo "==1==ERROR: AddressSanitizer: heap-use-after-free on address 0x6020" >>"$MC_DIR/node-n1.log"
	run stop_all
	[ "$status" -eq 1 ]
	[[ "$output" == *"sanitizer report in $MC_DIR/node-n1.log"* ]]
	[[ "$output" != *"report in $MC_DIR/master.log"* ]]
}

@test "the report of a restarted daemon's earlier instance counts too" {
	start_master
	mc_stop_pid "$MASTER_PID"
	echo "x.c:1:2: runtime error: signed integer overflow" >>"$MC_DIR/master.log"
	start_master	# its log starts empty; the earlier one is kept beside it
	[ -z "$(grep 'runtime error' "$MC_DIR/master.log")" ]
	run stop_all
	[ "$status" -eq 1 ]
	[[ "$output" == *"master.earlier.log"* ]]
}

@test "sanitized build: a real LeakSanitizer report in the master fails stop_all" {
	ldd "$MASTER" | grep -q libasan || skip "not a sanitized build (MC_BUILD=.output-asan)"
	local asan
	asan=$(cc -print-file-name=libasan.so)
	printf '%s\n' '#include <stdlib.h>' 'static void *p;' \
		'__attribute__((constructor)) static void leak(void) { p = malloc(4242); p = 0; }' \
		>"$BATS_TEST_TMPDIR/leak.c"
	cc -shared -fPIC -O0 -o "$BATS_TEST_TMPDIR/leak.so" "$BATS_TEST_TMPDIR/leak.c"
	MC_EXEC="env LD_PRELOAD=$asan:$BATS_TEST_TMPDIR/leak.so" start_master
	run stop_all
	[ "$status" -eq 1 ]
	[[ "$output" == *"ERROR: LeakSanitizer: detected memory leaks"* ]]
	[[ "$output" == *"4242 byte(s)"* ]]
}
