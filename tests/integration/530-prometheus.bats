#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# A real Prometheus server (Debian package `prometheus`) on loopback scrapes
# a master and a node every second; the test queries it through its HTTP API
# until every metric docs/metrics.md lists has a sample, after traffic that
# makes the counters move: puts past a 4 MiB segment (evictions), gets
# (leases), a hard pin, a soft pin set and cleared, a second tenant, an
# unknown key (a master error) and a malformed data-plane request (a node
# error).  The values Prometheus stored are checked against what happened.
bats_require_minimum_version 1.5.0

load helpers

setup() {
	mc_init
	[ -x "$NODE" ] && [ -x "$CTL" ] && [ -x "$RPC" ] || skip "daemons / tools not built"
	command -v prometheus >/dev/null ||
		skip "prometheus not installed (Debian package 'prometheus'; packaging/deps.sh test)"
	command -v curl >/dev/null && command -v jq >/dev/null || skip "curl and jq are needed"
	start_master
	MHTTP=$(sed -n 's/.*ready: rpc on [^ ,]*, http on \([^ ,]*\),.*/\1/p' "$MC_DIR/master.log")
	start_node p1 --segment_size=4M
	NHTTP=$(sed -n 's/.*ready: data on .*, http on \([^ ,]*\),.*/\1/p' "$MC_DIR/node-p1.log")
	[ -n "$MHTTP" ] && [ -n "$NHTTP" ]
	PROM_DIR=$BATS_TEST_TMPDIR/prom
	mkdir -p "$PROM_DIR"
}

teardown() {
	[ ! -f "$PROM_DIR/pid" ] || mc_stop_pid "$(cat "$PROM_DIR/pid")" prometheus
	stop_all
}

# start_prometheus: scrapes master and node every second; sets $PROM.
start_prometheus() {
	local try port i
	cat >"$PROM_DIR/prometheus.yml" <<-EOF
	global:
	  scrape_interval: 1s
	  scrape_timeout: 1s
	  evaluation_interval: 1s
	scrape_configs:
	  - job_name: master
	    static_configs: [ { targets: ['$MHTTP'] } ]
	  - job_name: node
	    static_configs: [ { targets: ['$NHTTP'] } ]
	EOF
	for try in 1 2 3; do
		port=$(free_port)
		prometheus --config.file="$PROM_DIR/prometheus.yml" \
			--storage.tsdb.path="$PROM_DIR/data" \
			--web.listen-address="127.0.0.1:$port" \
			</dev/null >"$PROM_DIR/log" 2>&1 3>&- &
		echo $! >"$PROM_DIR/pid"
		PROM=http://127.0.0.1:$port
		for i in $(seq 1 300); do	# 30 s: startup can be slow on a loaded machine
			curl -sf -o /dev/null "$PROM/-/ready" && return 0
			kill -0 "$(cat "$PROM_DIR/pid")" 2>/dev/null || break
			sleep 0.1
		done
		kill "$(cat "$PROM_DIR/pid")" 2>/dev/null
		_mc_reap "$(cat "$PROM_DIR/pid")"
		rm -f "$PROM_DIR/pid"
		grep -q 'address already in use' "$PROM_DIR/log" || break
	done
	echo "# prometheus did not become ready:" >&2
	sed 's/^/# /' "$PROM_DIR/log" >&2
	return 1
}

# query EXPR: the result vector of an instant query, one "labels value" a line.
query() {
	curl -sfG "$PROM/api/v1/query" --data-urlencode "query=$1" |
		jq -r '.data.result[] | "\(.metric | del(.instance) | tostring) \(.value[1])"'
}

# value EXPR: the single value of a query ("" when there is none).
value() {
	curl -sfG "$PROM/api/v1/query" --data-urlencode "query=$1" | jq -r '.data.result[0].value[1] // ""'
}

# The series name that shows a metric has a sample (histograms: _count).
doc_series() {
	awk '/^\| `(mooncake|process)_/ { split($0, f, "`"); split($0, c, "|"); t = c[3]; gsub(/ /, "", t);
		print f[2] (t == "histogram" ? "_count" : "") }' docs/metrics.md | sort -u
}

@test "Prometheus scrapes master and node and holds a sample of every documented metric" {
	# traffic, so the counters move; over the data plane, not shared memory
	export MC_DISABLE_SHM=1
	run -0 put_random hard 1M --hard-pin
	run -0 put_random soft 512K --pin-ttl 600000
	for i in 1 2 3 4 5 6; do run -0 put_random "k$i" 1M; done	# 4 MiB: evicts
	run -0 get_compare k6
	run -0 ctl object pin k6 --ttl 60000
	run -0 ctl object unpin k6
	run -0 ctl --tenant t1 object put tk "$(_mc_file k6)"
	run -0 "$RPC" "$MASTER_ADDR" get no-such-key
	[[ "$output" == *OBJECT_NOT_FOUND* ]]
	run -0 "$RPC" "$(node_endpoint p1)" op 0x1002	# DATA_READ without a body
	[[ "$output" == *DESERIALIZE_FAIL* ]]

	start_prometheus
	want=$(doc_series)
	[ "$(wc -l <<<"$want")" -ge 40 ]
	missing=
	for i in $(seq 1 60); do	# 30 s
		have=$(curl -sfG "$PROM/api/v1/query" \
			--data-urlencode 'query=count by (__name__) ({__name__=~"(mooncake|process)_.+"})' |
			jq -r '.data.result[].metric.__name__' | sort -u)
		missing=$(comm -23 <(echo "$want") <(echo "$have"))
		[ -z "$missing" ] && break
		sleep 0.5
	done
	if [ -n "$missing" ]; then
		echo "no sample in Prometheus for:"; echo "$missing"
		echo "targets:"; curl -s "$PROM/api/v1/targets" | jq -c '.data.activeTargets[] | [.labels.job, .health, .lastError]'
		sed 's/^/prometheus: /' "$PROM_DIR/log" | tail -n 20
		false
	fi

	# both targets up, and the values are what the traffic made them
	[ "$(value 'up{job="master"}')" = 1 ]
	[ "$(value 'up{job="node"}')" = 1 ]
	[ "$(value 'sum(mooncake_master_evicted_objects_total)')" -ge 1 ]
	[ "$(value 'sum(mooncake_master_evicted_bytes_total)')" -ge 1048576 ]
	[ "$(value 'mooncake_master_hard_pinned_objects')" = 1 ]
	[ "$(value 'mooncake_master_pins_total')" = 1 ]
	[ "$(value 'mooncake_master_unpins_total')" = 1 ]
	[ "$(value 'mooncake_master_leases_granted_total')" -ge 1 ]
	[ "$(value 'mooncake_master_heartbeats_total')" -ge 1 ]
	[ "$(value 'mooncake_node_heartbeats_total')" -ge 1 ]
	[ "$(value 'mooncake_node_mounted')" = 1 ]
	[ "$(value 'mooncake_master_rpc_errors_total{op="get_replica_list",code="OBJECT_NOT_FOUND"}')" -ge 1 ]
	[ "$(value 'mooncake_node_data_errors_total{op="data_read",code="DESERIALIZE_FAIL"}')" = 1 ]
	[ "$(value 'mooncake_master_tenant_objects{tenant="t1"}')" = 1 ]
	[ "$(value 'mooncake_master_tenant_charged_bytes{tenant="t1"}')" = 1048576 ]
	[ "$(value 'sum(mooncake_master_segment_capacity_bytes)')" = 4194304 ]
	[ "$(value 'sum(mooncake_master_segment_used_bytes) == scalar(mooncake_master_allocated_bytes)')" != "" ]
	[ "$(value 'mooncake_node_data_bytes_total{direction="in"}')" -ge 6815744 ]	# 6.5 MiB put
	[ "$(value 'sum(mooncake_node_data_duration_seconds_count{op=~"data_write|data_write_end"})')" -ge 8 ]
	[ "$(value 'mooncake_master_rpc_requests_total{op="put_start"}')" -ge 9 ]
	run -0 query 'mooncake_build_info'
	[ "$(wc -l <<<"$output")" = 2 ]		# master and node
}
