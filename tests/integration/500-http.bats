#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# The admin HTTP servers of mooncake-master and mooncake-node (libmicrohttpd,
# daemon/common/http-server.c): /health JSON, /metrics in the Prometheus text
# format (checked by promtool), 404 JSON for unknown paths, 405 for a wrong
# method, 413 for an oversized body, port 0 reported in the ready line.
bats_require_minimum_version 1.5.0

load helpers

setup() {
	mc_init
	[ -x "$NODE" ] || skip "mooncake-node not built"
	command -v curl >/dev/null && command -v jq >/dev/null || skip "curl and jq are needed"
	start_master
	MHTTP=$(sed -n 's/.*ready: rpc on [^ ,]*, http on \([^ ,]*\),.*/\1/p' "$MC_DIR/master.log")
	[ -n "$MHTTP" ]
	start_node h1
	NHTTP=$(sed -n 's/.*ready: data on .*, http on \([^ ,]*\),.*/\1/p' "$MC_DIR/node-h1.log")
	[ -n "$NHTTP" ]
}

teardown() {
	stop_all
}

# metric_value TEXT SERIES: the value of the sample whose name{labels} is SERIES.
metric_value() {
	awk -v s="$2" '$1 == s { print $2; found = 1 } END { exit !found }' <<<"$1"
}

@test "GET /health answers JSON on both daemons" {
	run -0 curl -sf "http://$MHTTP/health"
	[ "$(jq -r .status <<<"$output")" = ok ]
	[ "$(jq -r .role <<<"$output")" = single ]
	[ "$(jq -r .version <<<"$output")" = 0.1.0 ]
	run -0 curl -sf -o /dev/null -w '%{content_type}' "http://$MHTTP/health"
	[[ "$output" == application/json* ]]
	run -0 curl -sf "http://$NHTTP/health"
	[ "$(jq -r .status <<<"$output")" = ok ]
	[ "$(jq -r .version <<<"$output")" = 0.1.0 ]
}

@test "the http servers bind loopback by default, on the ports picked" {
	[[ "$MHTTP" == 127.0.0.1:* ]]
	[[ "$NHTTP" == 127.0.0.1:* ]]
	[ "${MHTTP#*:}" -gt 0 ] && [ "${MHTTP#*:}" != 9003 ]
	[ "${NHTTP#*:}" -gt 0 ] && [ "${NHTTP#*:}" != 9004 ]
}

@test "master /metrics has the documented families and counts RPCs per op" {
	run -0 curl -sf -D "$BATS_TEST_TMPDIR/h" "http://$MHTTP/metrics"
	m=$output
	grep -qi '^content-type: text/plain; version=0.0.4; charset=utf-8' "$BATS_TEST_TMPDIR/h"
	for f in mooncake_build_info mooncake_master_objects mooncake_master_capacity_bytes \
		mooncake_master_allocated_bytes mooncake_master_segments mooncake_master_clients \
		mooncake_master_soft_pinned_objects mooncake_master_evicted_objects_total \
		mooncake_master_evicted_bytes_total mooncake_master_rpc_requests_total \
		mooncake_master_rpc_errors_total mooncake_master_rpc_duration_seconds \
		mooncake_master_uptime_seconds; do
		grep -q "^# TYPE $f " <<<"$m" || { echo "missing $f"; false; }
	done
	# the commit built: 12 hex digits of git's, or unknown outside a checkout
	grep -Eq '^mooncake_build_info\{version="0\.1\.0",commit="([0-9a-f]{12}|unknown)"\} 1$' <<<"$m"
	# the node mounted one 16M segment
	[ "$(metric_value "$m" mooncake_master_segments)" = 1 ]
	[ "$(metric_value "$m" mooncake_master_capacity_bytes)" = 16777216 ]
	[ "$(metric_value "$m" mooncake_master_clients)" -ge 1 ]
	[ "$(metric_value "$m" 'mooncake_master_rpc_requests_total{op="mount_segment"}')" -ge 1 ]
	run -0 metric_value "$m" 'mooncake_master_rpc_duration_seconds_count{op="mount_segment"}'
	[ "$output" -ge 1 ]
	run -0 metric_value "$m" 'mooncake_master_rpc_duration_seconds_bucket{op="mount_segment",le="+Inf"}'
	[ "$output" -ge 1 ]
}

@test "node /metrics has the documented families and counts data-plane bytes" {
	MC_DISABLE_SHM=1 run -0 put_random k1 100000
	run -0 curl -sf "http://$NHTTP/metrics"
	m=$output
	for f in mooncake_build_info mooncake_node_segments mooncake_node_segment_bytes \
		mooncake_node_data_requests_total mooncake_node_data_bytes_total \
		mooncake_node_data_duration_seconds mooncake_node_mounted \
		mooncake_node_heartbeats_total; do
		grep -q "^# TYPE $f " <<<"$m" || { echo "missing $f"; false; }
	done
	[ "$(metric_value "$m" mooncake_node_segments)" = 1 ]
	[ "$(metric_value "$m" mooncake_node_segment_bytes)" = 16777216 ]
	[ "$(metric_value "$m" mooncake_node_mounted)" = 1 ]
	[ "$(metric_value "$m" 'mooncake_node_data_bytes_total{direction="in"}')" -ge 100000 ]
	# a small single-replica put writes with data_write_end (the node ends
	# it at the master), others with data_write
	writes() { awk -v p="$1" 'index($1, p "{op=\"data_write\"}") == 1 ||
		index($1, p "{op=\"data_write_end\"}") == 1 { n += $2 } END { print n + 0 }' <<<"$m"; }
	[ "$(writes mooncake_node_data_requests_total)" -ge 1 ]
	[ "$(writes mooncake_node_data_duration_seconds_count)" -ge 1 ]
	# only the data plane's ops
	[ -z "$(grep 'op="put_start"' <<<"$m")" ]
	MC_DISABLE_SHM=1 run -0 get_compare k1
	run -0 curl -sf "http://$NHTTP/metrics"
	[ "$(metric_value "$output" 'mooncake_node_data_bytes_total{direction="out"}')" -ge 100000 ]
}

# doc_families SECTION: the metric names of docs/metrics.md's "## SECTION" table.
doc_families() {
	awk -v s="## $1" '$0 == s { on = 1; next } /^## / { on = 0 }
		on && /^\| `(mooncake|process)_/ { split($0, f, "`"); print f[2] }' docs/metrics.md | sort
}

@test "docs/metrics.md lists exactly the families each daemon exports" {
	run -0 curl -sf "http://$MHTTP/metrics"
	diff <(awk '$1 == "#" && $2 == "TYPE" { print $3 }' <<<"$output" | sort) \
		<({ doc_families "Every daemon"; doc_families Master; } | sort)
	run -0 curl -sf "http://$NHTTP/metrics"
	diff <(awk '$1 == "#" && $2 == "TYPE" { print $3 }' <<<"$output" | sort) \
		<({ doc_families "Every daemon"; doc_families Node; } | sort)
}

@test "promtool check metrics is clean on both outputs" {
	command -v promtool >/dev/null ||
		skip "promtool not installed (Debian package 'prometheus'; packaging/deps.sh test)"
	# some traffic first, so the per-op series have values, and an error
	run -0 put_random k2 5000
	run -0 "$RPC" "$MASTER_ADDR" get no-such-key
	[[ "$output" == *OBJECT_NOT_FOUND* ]]
	for u in "$MHTTP" "$NHTTP"; do
		curl -sf "http://$u/metrics" >"$BATS_TEST_TMPDIR/m.txt"
		run -0 promtool check metrics <"$BATS_TEST_TMPDIR/m.txt"
		[ -z "$output" ] || { echo "promtool on $u: $output"; false; }
	done
}

@test "unknown path -> 404 JSON, wrong method -> 405, oversized body -> 413" {
	for u in "$MHTTP" "$NHTTP"; do
		run -0 curl -s -o "$BATS_TEST_TMPDIR/b" -w '%{http_code}' "http://$u/no/such/path"
		[ "$output" = 404 ]
		[ "$(jq -r .error.code "$BATS_TEST_TMPDIR/b")" = NOT_FOUND ]
		[ -n "$(jq -r .error.message "$BATS_TEST_TMPDIR/b")" ]
		run -0 curl -s -o "$BATS_TEST_TMPDIR/b" -w '%{http_code}' -X POST "http://$u/health"
		[ "$output" = 405 ]
		[ "$(jq -r .error.code "$BATS_TEST_TMPDIR/b")" = METHOD_NOT_ALLOWED ]
		run -0 curl -s -o /dev/null -w '%{http_code}' -X DELETE "http://$u/metrics"
		[ "$output" = 405 ]
		# the query string is not part of the path
		run -0 curl -s -o /dev/null -w '%{http_code}' "http://$u/health?x=1"
		[ "$output" = 200 ]
	done
	head -c 2000000 /dev/zero >"$BATS_TEST_TMPDIR/big"
	run -0 curl -s -o /dev/null -w '%{http_code}' --data-binary @"$BATS_TEST_TMPDIR/big" \
		"http://$MHTTP/health"
	[ "$output" = 413 ]
	# the server is still fine afterwards
	run -0 curl -sf "http://$MHTTP/health"
}

@test "--http_port of a port in use fails at start with a message (exit 2, a bad option)" {
	port=${MHTTP#*:}
	run -2 "$MASTER" --rpc_address=127.0.0.1 --rpc_port=0 --http_port="$port" \
		--state_dir="$MC_DIR/m2"
	[[ "$output" == *"option '--http_port': port $port on 127.0.0.1 is in use"* ]]
}
