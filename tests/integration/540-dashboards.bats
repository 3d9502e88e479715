#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# The Grafana dashboards (packaging/grafana/dashboards/*.json), without
# Grafana (not in Debian): their structure (tests/tools/check-dashboards.sh:
# jq), the provisioning files and `make install`, every metric they use
# documented or exported, and every panel query evaluated against a real
# Prometheus (Debian package `prometheus`) that scraped a master, a node and,
# in `make test-root` (built, root, BPF), mooncake-trace, after a workload that
# makes every family move: puts past a 4 MiB segment (evictions), gets
# (leases, expiring after 1 s), pins, a second tenant, a master error and a
# node error.  The checker's report names every panel without data.
bats_require_minimum_version 1.5.0

load helpers

DASH=packaging/grafana/dashboards
CHECK=tests/tools/check-dashboards.sh

# _stop_pid FILE: SIGTERM (then SIGKILL) the pid in FILE, reap it.
_stop_pid() {
	[ -f "$1" ] || return 0
	mc_stop_pid "$(cat "$1")"
	rm -f "$1"
}

# start_trace: mooncake-trace on an ephemeral port, maps pinned under
# $PIN; sets $THTTP.  Returns 1 (with $LIVE/trace.skip saying why) when it
# cannot run here.
start_trace() {
	local trace=$O/bin/mooncake-trace why
	if [ ! -x "$trace" ]; then
		echo "mooncake-trace is not built ($trace)" >"$LIVE/trace.skip"; return 1
	fi
	if ! mc_may_use_root; then
		echo "mooncake-trace needs root (CAP_SYS_ADMIN for uprobes; make test-root)" >"$LIVE/trace.skip"; return 1
	fi
	if ! why=$("$trace" --check=true 2>&1); then
		echo "BPF unavailable: $why" >"$LIVE/trace.skip"; return 1
	fi
	# scan_under: never attach to the processes of other builds on this host
	# libmooncake: the build tree's, as the dynamic loader finds it here
	LD_LIBRARY_PATH="$O/lib" "$trace" --http_port=0 --pin_path="$PIN" --scan_interval_ms=100 --slow_transfer_us=0 \
		--scan_under="$MC_DIR/" </dev/null 2>"$MC_DIR/trace.log" 3>&- &
	echo $! >"$LIVE/trace.pid"
	if ! THTTP=$(_mc_wait_line "$MC_DIR/trace.log" '.*ready: http on \([^ ,]*\),.*' "$(cat "$LIVE/trace.pid")"); then
		{ echo "mooncake-trace did not start:"; cat "$MC_DIR/trace.log"; } >"$LIVE/trace.skip"
		_stop_pid "$LIVE/trace.pid"
		return 1
	fi
}

# start_prometheus: scrapes every second what is running; sets $PROM.
start_prometheus() {
	local try port i
	{
		echo "global: { scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s }"
		echo "scrape_configs:"
		echo "  - { job_name: mooncake-master, static_configs: [ { targets: ['$MHTTP'] } ] }"
		echo "  - { job_name: mooncake-node, static_configs: [ { targets: ['$NHTTP'] } ] }"
		[ -z "${THTTP:-}" ] ||
			echo "  - { job_name: mooncake-trace, static_configs: [ { targets: ['$THTTP'] } ] }"
	} >"$LIVE/prometheus.yml"
	for try in 1 2 3; do
		port=$(free_port)
		prometheus --config.file="$LIVE/prometheus.yml" --storage.tsdb.path="$LIVE/data" \
			--web.listen-address="127.0.0.1:$port" </dev/null >"$LIVE/prometheus.log" 2>&1 3>&- &
		echo $! >"$LIVE/prometheus.pid"
		PROM=http://127.0.0.1:$port
		for i in $(seq 1 300); do	# 30 s: startup can be slow on a loaded machine
			curl -sf -o /dev/null "$PROM/-/ready" && return 0
			kill -0 "$(cat "$LIVE/prometheus.pid")" 2>/dev/null || break
			sleep 0.1
		done
		_stop_pid "$LIVE/prometheus.pid"
		grep -q 'address already in use' "$LIVE/prometheus.log" || break
	done
	echo "# prometheus did not become ready:" >&2
	sed 's/^/# /' "$LIVE/prometheus.log" >&2
	return 1
}

# prom_value EXPR: the first value of an instant query ("" when none).
prom_value() {
	curl -sfG "$PROM/api/v1/query" --data-urlencode "query=$1" | jq -r '.data.result[0].value[1] // ""'
}

# The cluster, the tracer and Prometheus run once for the file; the tests
# that need Prometheus skip (with the reason in $LIVE/skip) without it.
setup_file() {
	LIVE=$BATS_FILE_TMPDIR/live
	mkdir -p "$LIVE"
	mc_init "$BATS_FILE_TMPDIR/mc"
	PIN=/sys/fs/bpf/mcdash-$$
	export LIVE PIN
	if [ ! -x "$NODE" ] || [ ! -x "$CTL" ] || [ ! -x "$RPC" ]; then
		echo "daemons / tools not built" >"$LIVE/skip"; return 0
	fi
	start_master --lease_ttl_ms=1000
	MHTTP=$(sed -n 's/.*ready: rpc on [^ ,]*, http on \([^ ,]*\),.*/\1/p' "$MC_DIR/master.log")
	start_node d1 --segment_size=4M
	NHTTP=$(sed -n 's/.*ready: data on .*, http on \([^ ,]*\),.*/\1/p' "$MC_DIR/node-d1.log")
	THTTP=
	start_trace || true
	export MHTTP NHTTP THTTP
	if ! command -v prometheus >/dev/null; then
		echo "prometheus not installed (Debian package 'prometheus'; packaging/deps.sh test)" >"$LIVE/skip"
		return 0
	fi
	start_prometheus
	export PROM
	# every target up before the workload, so that rates see it move
	local want=2 i
	[ -z "$THTTP" ] || want=3
	for i in $(seq 1 100); do
		[ "$(prom_value 'count(up == 1)')" = "$want" ] && break
		sleep 0.1
	done
	[ "$(prom_value 'count(up == 1)')" = "$want" ]

	# the workload: over TCP (the node's data plane) and shared memory
	MC_DISABLE_SHM=1 put_random hard 512K --hard-pin
	MC_DISABLE_SHM=1 put_random soft 512K --pin-ttl 600000
	local k
	for k in 1 2 3 4 5 6; do MC_DISABLE_SHM=1 put_random "k$k" 1M; done	# 4 MiB: evicts
	MC_DISABLE_SHM=1 get_compare k6
	get_compare k6
	ctl object pin k6 --ttl 60000
	ctl object unpin k6
	ctl --tenant t1 object put tk "$(_mc_file k6)"
	"$RPC" "$MASTER_ADDR" get no-such-key | grep -q OBJECT_NOT_FOUND
	"$RPC" "$(node_endpoint d1)" op 0x1002 | grep -q DESERIALIZE_FAIL	# DATA_READ, no body
	# leases (1 s) run out and are observed; a few scrapes after that
	sleep 2.5
}

teardown_file() {
	local rc=0
	_stop_pid "$LIVE/prometheus.pid"
	_stop_pid "$LIVE/trace.pid"
	stop_all || rc=1
	[ ! -d "$PIN" ] || rm -rf "$PIN"
	return $rc
}

setup() {
	cd "$BATS_TEST_DIRNAME/../.." || return 1
}

# The checker reads $__rate_interval as 10m, not 1m: on a loaded machine
# the workload of setup_file may be over a minute old when the last test
# runs, and a quantile over a window with no observation is NaN (no data).
need_prometheus() {
	[ ! -f "$LIVE/skip" ] || skip "$(cat "$LIVE/skip")"
	[ -n "${PROM:-}" ]
}

@test "dashboards: valid JSON, unique uids and titles, every panel on \${DS_PROMETHEUS}" {
	for d in mooncake-master mooncake-nodes mooncake-trace; do [ -f "$DASH/$d.json" ]; done
	run -0 "$CHECK" "$DASH"/*.json
	[[ "$output" == *"dashboards: "*" panels, "* ]]
	# every dashboard selects its daemons by $instance, and every query uses it
	for f in "$DASH"/*.json; do
		[ "$(jq '[.templating.list[] | select(.name == "instance")] | length' "$f")" = 1 ]
		run -0 jq -r '[.panels[] | select(.type != "row") | .targets[].expr |
			select(test("instance=~\"\\$instance\"") | not)] | .[]' "$f"
		[ -z "$output" ] || { echo "$f: queries without \$instance: $output"; false; }
	done
	# the checker catches what it claims to
	jq '.panels[2].datasource.uid = "prom" | .panels[3].targets[0].expr = ""' \
		"$DASH/mooncake-master.json" >"$BATS_TEST_TMPDIR/bad.json"
	run -1 "$CHECK" "$BATS_TEST_TMPDIR/bad.json"
	[[ "$output" == *'datasource is not ${DS_PROMETHEUS}'* ]]
	[[ "$output" == *"empty expr"* ]]
	run -1 "$CHECK" "$DASH/mooncake-master.json" "$BATS_TEST_TMPDIR/bad.json"
	[[ "$output" == *"uid used by more than one dashboard: mooncake-master"* ]]
	echo '{"uid":' >"$BATS_TEST_TMPDIR/broken.json"
	run -1 "$CHECK" "$BATS_TEST_TMPDIR/broken.json"
	[[ "$output" == *"not a JSON object"* ]]
}

@test "the generator reproduces the committed dashboards" {
	command -v python3 >/dev/null || skip "python3 not installed"
	cp -r packaging/grafana "$BATS_TEST_TMPDIR/g"
	run -0 python3 "$BATS_TEST_TMPDIR/g/gen-dashboards.py"
	run -0 diff -r "$DASH" "$BATS_TEST_TMPDIR/g/dashboards"
}

@test "provisioning points at the installed dashboards; make install puts them there" {
	p=packaging/grafana/provisioning
	grep -q '^      path: /usr/share/mooncake/grafana/dashboards$' "$p/dashboards/mooncake.yaml"
	grep -q '^    type: file$' "$p/dashboards/mooncake.yaml"
	grep -q '^    type: prometheus$' "$p/datasources/prometheus.yaml"
	run -0 make -s install-grafana DESTDIR="$BATS_TEST_TMPDIR/root" PREFIX=/usr
	g=$BATS_TEST_TMPDIR/root/usr/share/mooncake/grafana
	for f in "$DASH"/*.json; do cmp "$f" "$g/dashboards/${f##*/}"; done
	cmp "$p/dashboards/mooncake.yaml" "$g/provisioning/dashboards/mooncake.yaml"
	cmp "$p/datasources/prometheus.yaml" "$g/provisioning/datasources/prometheus.yaml"
	# another prefix: the provider follows it
	run -0 make -s install-grafana DESTDIR="$BATS_TEST_TMPDIR/root2" PREFIX=/opt/mc
	grep -q 'path: /opt/mc/share/mooncake/grafana/dashboards$' \
		"$BATS_TEST_TMPDIR/root2/opt/mc/share/mooncake/grafana/provisioning/dashboards/mooncake.yaml"
}

@test "every metric a dashboard uses is documented or exported by a daemon" {
	[ ! -f "$LIVE/skip" ] || [ -n "${MHTTP:-}" ] || skip "$(cat "$LIVE/skip")"
	names=$BATS_TEST_TMPDIR/names
	{
		for d in docs/metrics.md docs/metrics-trace.md; do
			[ -f "$d" ] && grep -oE '`mooncake_[A-Za-z0-9_:]+`' "$d" | tr -d '`'
		done
		for u in "$MHTTP" "$NHTTP" ${THTTP:+"$THTTP"}; do
			curl -sf "http://$u/metrics" | awk '$1 == "#" && $2 == "TYPE" { print $3 }'
		done
	} | sort -u >"$names"
	[ -s "$names" ]
	files=("$DASH/mooncake-master.json" "$DASH/mooncake-nodes.json")
	# without the tracer, only its documentation can vouch for the trace dashboard
	if [ -n "${THTTP:-}" ] || [ -f docs/metrics-trace.md ]; then
		files+=("$DASH/mooncake-trace.json")
	fi
	run "$CHECK" --names "$names" "${files[@]}"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${#files[@]}" -eq 3 ] || skip "trace dashboard not checked: no tracer and no docs/metrics-trace.md"
}

@test "master dashboard: every panel query returns data from Prometheus" {
	need_prometheus
	run "$CHECK" --prom "$PROM" --rate-interval 10m "$DASH/mooncake-master.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *" without (), 0 allowed empty"* ]]
	# and the values are the workload's
	[ "$(prom_value 'sum(mooncake_master_evicted_objects_total)')" -ge 1 ]
	[ "$(prom_value 'mooncake_master_tenant_objects{tenant="t1"}')" = 1 ]
}

@test "nodes dashboard: every panel query returns data from Prometheus" {
	need_prometheus
	run "$CHECK" --prom "$PROM" --rate-interval 10m "$DASH/mooncake-nodes.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *" without (), 0 allowed empty"* ]]
	[ "$(prom_value 'sum(mooncake_node_data_bytes_total{direction="in"})')" -ge 6291456 ]
}

# bats test_tags=root
@test "trace dashboard: every panel query returns data from Prometheus" {
	need_prometheus
	[ -n "${THTTP:-}" ] || skip "trace dashboard not evaluated: $(cat "$LIVE/trace.skip")"
	# on loopback nothing retransmits: that panel alone may be empty
	run "$CHECK" --prom "$PROM" --rate-interval 10m --may-be-empty "TCP retransmits by remote" "$DASH/mooncake-trace.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *" without (), "* ]]
	# the retransmit family is exported all the same
	curl -sf "http://$THTTP/metrics" | grep -q '^# TYPE mooncake_trace_tcp_retransmits_total counter'
	[ "$(prom_value 'sum(mooncake_trace_puts_ended_total)')" -ge 8 ]
}
