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

@test "REST: a too long URI is 414 and too large headers are 431, both in the JSON error format" {
	start_master
	local long hdr
	long=$(head -c 40000 /dev/zero | tr '\0' a)
	run -0 curl -s -D "$BATS_TEST_TMPDIR/h" -o "$BATS_TEST_TMPDIR/b" -w '%{http_code}' \
		"http://$MASTER_HTTP/api/v1/objects?prefix=$long"
	[ "$output" = 414 ]
	grep -qi '^content-type: application/json' "$BATS_TEST_TMPDIR/h"
	[ "$(jq -r .error.code "$BATS_TEST_TMPDIR/b")" = URI_TOO_LONG ]
	[[ "$(jq -r .error.message "$BATS_TEST_TMPDIR/b")" == "request target of "*" bytes (at most "*")" ]]
	hdr=$(head -c 24000 /dev/zero | tr '\0' b)
	run -0 curl -s -D "$BATS_TEST_TMPDIR/h" -o "$BATS_TEST_TMPDIR/b" -w '%{http_code}' \
		-H "X-Big: $hdr" "http://$MASTER_HTTP/health"
	[ "$output" = 431 ]
	grep -qi '^content-type: application/json' "$BATS_TEST_TMPDIR/h"
	[ "$(jq -r .error.code "$BATS_TEST_TMPDIR/b")" = HEADERS_TOO_LARGE ]
	# the node's admin server too, and both still serve
	start_node n1
	local nh
	nh=$(sed -n 's/.*http on \([^ ,]*\).*/\1/p' "$MC_DIR/node-n1.log" | tail -n1)
	[ -n "$nh" ]
	run -0 curl -s -o "$BATS_TEST_TMPDIR/b" -w '%{http_code}' "http://$nh/metrics?$long"
	[ "$output" = 414 ]
	jq -e .error.code "$BATS_TEST_TMPDIR/b"
	run -0 curl -sf "http://$MASTER_HTTP/health"
	run -0 curl -sf "http://$nh/health"
}

@test "64 slow HTTP clients from one address do not make /health time out" {
	start_master
	local hold
	python3 "$HOLD" "$MASTER_HTTP" 64 12 --from 127.0.0.2 --slow-http >"$BATS_TEST_TMPDIR/hold" &
	hold=$!
	local i
	for i in $(seq 1 100); do grep -q '^open' "$BATS_TEST_TMPDIR/hold" && break; sleep 0.1; done
	grep -q '^open' "$BATS_TEST_TMPDIR/hold"
	sleep 1
	# from another address: answered at once, three times over
	for i in 1 2 3; do
		run -0 curl -sf -m 2 "http://$MASTER_HTTP/health"
		[ "$(jq -r .status <<<"$output")" = ok ]
	done
	run -0 curl -sf -m 2 "http://$MASTER_HTTP/metrics"
	kill "$hold" 2>/dev/null || true
	wait "$hold" || true
}

# make_tenants N: tenants t0001..tN with a quota, over one keep-alive connection.
make_tenants() {
	local i cfg=$BATS_TEST_TMPDIR/curl.cfg
	: >"$cfg"
	for i in $(seq -f '%04g' 1 "$1"); do
		printf 'url = "http://%s/api/v1/tenants/t%s/quota"\n' "$MASTER_HTTP" "$i" >>"$cfg"
	done
	curl -sf -X PUT -H 'Content-Type: application/json' -d '{"quota_bytes":1048576}' \
		-K "$cfg" -o /dev/null
}

@test "REST: /api/v1/tenants is paged, and tenant list pages through" {
	start_master
	make_tenants 1100
	run -0 curl -sf "http://$MASTER_HTTP/api/v1/tenants"
	[ "$(jq '.tenants | length' <<<"$output")" = 1000 ]
	[ "$(jq -r '.next_cursor | type' <<<"$output")" = string ]
	# pages of 300 by name: every tenant once, in order, then a null cursor
	local cursor="" pages=0 names=$BATS_TEST_TMPDIR/names
	: >"$names"
	while :; do
		run -0 curl -sf "http://$MASTER_HTTP/api/v1/tenants?limit=300${cursor:+&cursor=$cursor}"
		jq -r '.tenants[].name' <<<"$output" >>"$names"
		cursor=$(jq -r '.next_cursor // empty' <<<"$output")
		pages=$((pages + 1))
		[ -n "$cursor" ] && [ "$pages" -lt 10 ] || break
	done
	[ "$pages" = 4 ]
	[ "$(wc -l <"$names")" = 1101 ]
	sort -c "$names"
	[ "$(sort -u "$names" | wc -l)" = 1101 ]
	run -0 curl -s -o /dev/null -w '%{http_code}' "http://$MASTER_HTTP/api/v1/tenants?cursor=zz"
	[ "$output" = 400 ]
	run -0 curl -s -o /dev/null -w '%{http_code}' "http://$MASTER_HTTP/api/v1/tenants?limit=0"
	[ "$output" = 400 ]
	# the CLI shows them all
	run -0 ctl -o json tenant list
	[ "$(jq '.tenants | length' <<<"$output")" = 1101 ]
	run -0 ctl tenant list
	[ "${#lines[@]}" = 1102 ]
}

@test "metrics: a healthy cluster has error series at zero, process_* and the commit; no rpc_all_*" {
	start_master
	start_node n1
	local nh m n
	nh=$(sed -n 's/.*http on \([^ ,]*\).*/\1/p' "$MC_DIR/node-n1.log" | tail -n1)
	m=$(curl -sf "http://$MASTER_HTTP/metrics")
	n=$(curl -sf "http://$nh/metrics")
	# the "Errors by op and code" panels have series before the first error
	grep -qx 'mooncake_master_rpc_errors_total{op="get_replica_list",code="OBJECT_NOT_FOUND"} 0' <<<"$m"
	grep -qx 'mooncake_master_rpc_errors_total{op="put_start",code="NO_AVAILABLE_HANDLE"} 0' <<<"$m"
	grep -qx 'mooncake_node_data_errors_total{op="data_read",code="INVALID_READ"} 0' <<<"$n"
	! grep -q rpc_all_ <<<"$m"
	local out
	for out in "$m" "$n"; do
		# the commit built (12 hex digits; "unknown" outside a git checkout)
		grep -Eq '^mooncake_build_info\{version="[0-9.]+",commit="([0-9a-f]{12}|unknown)"\} 1$' <<<"$out"
		for f in process_cpu_seconds_total process_resident_memory_bytes process_open_fds \
			process_max_fds process_virtual_memory_bytes; do
			grep -q "^$f [0-9]" <<<"$out" || { echo "no $f"; false; }
		done
		# started within the last minute, by the wall clock
		st=$(awk '$1 == "process_start_time_seconds" { printf "%d", $2 }' <<<"$out")
		[ $(( $(date +%s) - st )) -lt 60 ] && [ $(( $(date +%s) - st )) -ge 0 ]
	done
}

@test "a tenant flood: a clear limit error, empty tenants reclaimed, per-tenant series capped" {
	start_master --max_tenants=20 --metrics_tenants=5
	start_node n1
	echo data >"$MC_DIR/data/f"
	local i
	for i in $(seq 1 19); do ctl --tenant "t$i" object put k "$MC_DIR/data/f" >/dev/null; done
	# the 21st tenant (default included): its own error, saying what to do
	run ctl --tenant t20 object put k "$MC_DIR/data/f"
	[ "$status" -ne 0 ]
	[[ "$output" == *TENANT_LIMIT_EXCEEDED* ]]
	[[ "$output" != *NO_AVAILABLE_HANDLE* ]]
	# known tenants still work
	run -0 ctl --tenant t1 object put k2 "$MC_DIR/data/f"
	# /metrics: 5 tenants and "other" per family, not 20
	run -0 curl -sf "http://$MASTER_HTTP/metrics"
	[ "$(grep -c '^mooncake_master_tenant_objects{' <<<"$output")" = 6 ]
	grep -q '^mooncake_master_tenant_objects{tenant="other"} ' <<<"$output"
	[ "$(awk '$1 == "mooncake_master_tenants" { print $2 }' <<<"$output")" = 20 ]
	# tenants that become empty are reclaimed: room for new ones
	for i in $(seq 2 6); do ctl --tenant "t$i" object rm k --force; done
	run -0 ctl --tenant t20 object put k "$MC_DIR/data/f"
	local n r
	for i in $(seq 1 40); do
		run -0 curl -sf "http://$MASTER_HTTP/metrics"
		n=$(awk '$1 == "mooncake_master_tenants" { print $2 }' <<<"$output")
		[ "$n" = 16 ] && break
		sleep 0.1
	done
	[ "$n" = 16 ]
	r=$(awk '$1 == "mooncake_master_tenants_reclaimed_total" { print $2 }' <<<"$output")
	[ "$r" = 5 ]
	run -0 ctl -o json tenant list
	[ "$(jq '[.tenants[].name] | index("t3")' <<<"$output")" = null ]
	[ "$(jq '.tenants | length' <<<"$output")" = 16 ]
	# a reclaimed name comes back empty
	run -4 ctl --tenant t3 object exist k
}

# shm_files NAME: the node's segment files that exist now.
shm_files() {
	local id
	for id in $(awk '$1 == "segment" { print $2 }' "$MC_DIR/node-$1/node.id"); do
		[ -e "/dev/shm/mooncake-$id" ] && echo "/dev/shm/mooncake-$id"
	done
	return 0
}

@test "node release: refused while the master counts on the segments, frees them once it does not" {
	start_master --client_ttl_ms=1000
	start_node n1 --segments=2
	put_random k1 100K
	[ "$(shm_files n1 | wc -l)" = 2 ]
	# a running node: its segments are mounted
	run -1 ctl node release --state-dir "$MC_DIR/node-n1"
	[[ "$output" == *"is still known to the master (status ok"* ]]
	[[ "$output" == *"nothing released"* ]]
	[ "$(shm_files n1 | wc -l)" = 2 ]
	# killed: the master keeps its segments (and the object) for client_ttl_ms
	kill_node n1
	run -1 ctl node release --state-dir "$MC_DIR/node-n1"
	[[ "$output" == *"it counts on those bytes"* ]]
	[ "$(shm_files n1 | wc -l)" = 2 ]
	# the master dropped the silent node: released
	local i
	for i in $(seq 1 60); do
		[ "$(curl -sf "http://$MASTER_HTTP/api/v1/segments" | jq '.segments | length')" = 0 ] && break
		sleep 0.1
	done
	run -0 ctl node release --state-dir "$MC_DIR/node-n1"
	[[ "$output" == *"released 2 segment(s), 33554432 bytes"* ]]
	[ -z "$(shm_files n1)" ]
	run -0 ctl node release --state-dir "$MC_DIR/node-n1"
	[[ "$output" == "nothing to release"* ]]
	# a node stopped with SIGTERM unmounts: released at once; it starts again
	start_node n2
	[ "$(shm_files n2 | wc -l)" = 1 ]
	kill_node n2 TERM
	[ "$(shm_files n2 | wc -l)" = 1 ]	# left on purpose
	run -0 ctl node release --state-dir "$MC_DIR/node-n2"
	[ -z "$(shm_files n2)" ]
	start_node n2
	[ "$(shm_files n2 | wc -l)" = 1 ]
	# no master to ask: refused unless --force
	mc_stop_pid "$(node_pid n2)"
	mc_stop_pid "$MASTER_PID"
	run -1 ctl node release --state-dir "$MC_DIR/node-n2"
	[[ "$output" == *"--force releases them anyway"* ]]
	[ "$(shm_files n2 | wc -l)" = 1 ]
	run -0 ctl node release --state-dir "$MC_DIR/node-n2" --force
	[ -z "$(shm_files n2)" ]
	run -1 ctl node release --state-dir "$MC_DIR/nowhere"
	[[ "$output" == *"cannot read $MC_DIR/nowhere/node.id"* ]]
}
