#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# The operator's findings (issue 19, items 6-10) and the REST, tenant, log
# and slow-client limits of issue 13, each written as the action that went
# wrong: a config directory, a port clash found only after recovery, a
# snapshot listed at 0 ms, a log flood, HTML 414/431 answers, an unpaged
# tenant list, missing zero error series and process_* metrics, a tenant
# flood, slow HTTP clients, and shm segments left by a stopped node.
bats_require_minimum_version 1.5.0

load helpers

setup() {
	mc_init
}

teardown() {
	stop_all
}

HOLD=tests/tools/mc-hold-conns.py

@test "--config=DIR fails with exit 2 and says it is a directory" {
	run -2 "$MASTER" --config=/tmp --state_dir="$MC_DIR/m"
	[[ "$output" == *"config file '/tmp' is a directory"* ]]
	run -2 "$NODE" --config="$MC_DIR"
	[[ "$output" == *"is a directory"* ]]
}

@test "a port clash or a bad address exits 2 naming the option, before state recovery" {
	start_master
	local rpc_port=${MASTER_ADDR##*:} http_port=${MASTER_HTTP##*:}
	# A second master on the first one's ports, with a state to recover.
	run -2 "$MASTER" --rpc_address=127.0.0.1 --rpc_port="$rpc_port" --http_port=0 \
		--state_dir="$MC_DIR/master2"
	[[ "$output" == *"option '--rpc_port': port $rpc_port on 127.0.0.1 is in use"* ]]
	[[ "$output" != *recovered* ]]
	run -2 "$MASTER" --rpc_address=127.0.0.1 --rpc_port=0 --http_address=127.0.0.1 \
		--http_port="$http_port" --state_dir="$MC_DIR/master2"
	[[ "$output" == *"option '--http_port'"*"in use"* ]]
	[[ "$output" != *recovered* ]]
	run -2 "$MASTER" --rpc_address=192.0.2.77 --rpc_port=0 --http_port=0 \
		--state_dir="$MC_DIR/master2"
	[[ "$output" == *"bad value '192.0.2.77' for option '--rpc_address'"* ]]
	[[ "$output" != *recovered* ]]
	run -2 "$NODE" --master="$MASTER_ADDR" --data_address=no-such-host.invalid \
		--state_dir="$MC_DIR/node2"
	[[ "$output" == *"option '--data_address'"* ]]
}

@test "snapshot list shows the duration snapshot create reported" {
	start_master
	start_node n1
	local i
	for i in $(seq 1 40); do ctl object put "k$i" /etc/hostname >/dev/null; done
	run -0 ctl -o json snapshot create
	local id ms
	id=$(jq -r .id <<<"$output")
	ms=$(jq -r .duration_ms <<<"$output")
	[[ "$ms" =~ ^[0-9]+$ ]]
	run -0 ctl -o json snapshot list
	[ "$(jq -r --argjson id "$id" '.snapshots[] | select(.id == $id) | .duration_ms' <<<"$output")" = "$ms" ]
	# The file keeps it: a restarted master lists the same.
	mc_stop_pid "$MASTER_PID"
	start_master
	run -0 ctl -o json snapshot list
	[ "$(jq -r --argjson id "$id" '.snapshots[] | select(.id == $id) | .duration_ms' <<<"$output")" = "$ms" ]
}

@test "a flood of one failure costs a few log lines and a summary" {
	# 40 descriptors: connections past that make accept() fail with EMFILE,
	# which the server reports each time it tries.
	MC_EXEC="prlimit --nofile=40:40" start_master
	run -0 timeout 20 python3 "$HOLD" "$MASTER_ADDR" 80 3
	sleep 1
	local lines bytes
	lines=$(grep -c 'accept: ' "$MC_DIR/master.log" || true)
	bytes=$(stat -c %s "$MC_DIR/master.log")
	echo "# $lines accept lines, $bytes bytes" >&3
	[ "$bytes" -lt 20000 ]
	[ "$lines" -le 6 ]
	# Stopping writes the summary of what was held back.
	mc_stop_pid "$MASTER_PID"
	if [ "$lines" -ge 5 ]; then
		grep 'repeated' "$MC_DIR/master.log" >&3 || true
		grep -q 'accept: .*(... repeated [0-9]* times in [0-9]* s)' "$MC_DIR/master.log"
	fi
}
