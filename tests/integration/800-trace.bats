#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# eBPF observability: the USDT probes in the binaries, mooncake-trace (BPF
# programs from bpf/, maps pinned on a bpffs, /metrics), mooncakectl trace.
# A known workload (puts, gets over shm and TCP, evictions past capacity)
# must be counted exactly, in the pinned maps (bpftool map dump, parsed
# with jq) and in the exported mooncake_trace_* metrics.  The BPF tests
# skip, with the reason, only where BPF cannot run: not root, or a kernel
# without uprobes / BTF / ring buffers (mooncake-trace --check=true says).
bats_require_minimum_version 1.5.0

load helpers

# `make test-root`: every test here needs root.
# bats file_tags=root

setup() {
	mc_init
	TRACE=$O/bin/mooncake-trace
	[ -x "$TRACE" ] || skip "mooncake-trace not built"
	PIN=/sys/fs/bpf/mctest-$$-$BATS_TEST_NUMBER
	# the tracer and mooncakectl trace attach to the libmooncake.so.0 the
	# dynamic loader finds, as applications of this environment load it:
	# the build tree's
	export LD_LIBRARY_PATH=$O/lib
}

teardown() {
	local rc=0
	[ -z "${TRACE_PID:-}" ] || mc_stop_pid "$TRACE_PID" mooncake-trace
	stop_all || rc=1
	[ ! -d "$PIN" ] || rm -rf "$PIN"
	return $rc
}

need_bpf() {
	[ "$(id -u)" -eq 0 ] || skip "BPF tracing needs root (CAP_SYS_ADMIN for uprobes)"
	local why
	why=$("$TRACE" --check=true) || skip "BPF unavailable: $why"
	command -v bpftool >/dev/null || skip "bpftool not installed"
}

# start_trace [options]: sets TRACE_PID, TRACE_HTTP
start_trace() {
	local log=$MC_DIR/trace.log
	: >"$log"
	# scan_under: never attach to the processes of other builds on this host
	"$TRACE" --http_port=0 --pin_path="$PIN" --scan_interval_ms=100 --log_level=debug \
		--scan_under="$MC_DIR/" "$@" \
		</dev/null 2>"$log" 3>&- &
	TRACE_PID=$!
	if ! TRACE_HTTP=$(_mc_wait_line "$log" '.*ready: http on \([^ ,]*\),.*' "$TRACE_PID"); then
		sed 's/^/# /' "$log" >&2
		return 1
	fi
}

metric() { # metric NAME_WITH_LABELS: its value in the tracer's /metrics
	curl -sf "http://$TRACE_HTTP/metrics" | awk -v n="$1" '$1 == n { print $2 }'
}

# what an operator sees (with BTF, bpftool prints the fields as JSON)
dump() { bpftool map dump pinned "$PIN/$1"; }

@test "probes are in the binaries (readelf -n), provider mooncake" {
	notes() { readelf -n "$1" | awk '/Provider: mooncake/ { getline; print $2 }' | sort -u | tr '\n' ' '; }
	[ "$(notes "$MASTER")" = "evict__batch lease__batch put__sum " ]
	readelf -n "$MASTER" | grep -A2 "Name: lease__batch" | grep -Eq "Semaphore: 0x0*[1-9a-f]"
	[ "$(notes "$NODE")" = "transfer__batch transfer__sum " ]
	[ "$(notes "$O/lib/libmooncake.so.0")" = "transfer__batch transfer__sum " ]
	[ "$(notes "$CTL")" = "transfer__batch transfer__sum " ]
	# the *__batch probes have USDT semaphores: nothing is recorded untraced
	readelf -n "$O/lib/libmooncake.so.0" | grep -A2 'Name: transfer__batch' | grep -Eq 'Semaphore: 0x0*[1-9a-f]'
	readelf -n "$O/lib/libmooncake.so.0" | grep -A2 'Name: transfer__sum' | grep -Eq 'Semaphore: 0x0*[1-9a-f]'
	# every probe and its arguments are documented in the one table
	for p in evict__batch lease__batch put__sum transfer__batch transfer__sum; do
		grep -q "^ \*   $p (" lib/util/probes.h
	done
}

@test "mooncake-trace: --help lists the options; bad options exit 2" {
	run -0 "$TRACE" --help
	for o in http_address http_port pin_path slow_transfer_us log_level attach keep_pins; do
		[[ "$output" == *"--$o="* ]]
	done
	[[ "$output" == *"(default: 9005)"* ]]
	run -2 "$TRACE" --no_such_option=1
	[[ "$output" == *"unknown option"* ]]
	run -2 "$TRACE" --log_level=loud
	run -2 "$TRACE" --pin_path=relative
	run -2 "$TRACE" --slow_transfer_us=abc
	run -2 "$CTL" trace list   # trace is a real group of mooncakectl now
	[[ "$output" == *"trace: unknown verb 'list'"* ]]
	run -2 "$TRACE" --probes=lease__batch,nope
	[[ "$output" == *"unknown probe 'nope'"* ]]
}

@test "mooncake-trace finds libmooncake as the dynamic loader does, and stops loudly when it cannot" {
	# no privileges needed: the library is looked up before anything is loaded
	run -1 env LD_LIBRARY_PATH="$O/lib" "$TRACE" --http_port=0 --pin_path="$PIN" \
		--libmooncake=/nonexistent/libmooncake.so.0
	[[ "$output" == *"cannot find libmooncake.so.0: /nonexistent/libmooncake.so.0: No such file"* ]]
	[[ "$output" == *"--libmooncake=PATH"* ]]
	# an explicit list of files needs no library: the start goes on to the
	# privilege check
	if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
		run -1 env -u LD_LIBRARY_PATH setpriv --reuid=nobody --regid=nogroup --clear-groups \
			--inh-caps=-all "$TRACE" --http_port=0 --pin_path="$PIN" --attach="$MASTER"
		[[ "$output" == *"cannot trace: needs CAP_SYS_ADMIN"* ]]
	fi
	if ldconfig -p | grep -q 'libmooncake\.so\.0 '; then
		skip "libmooncake.so.0 is installed on this host: the loader always finds it"
	fi
	# not in the loader's path: an error naming the library and what to do,
	# never a tracer that silently leaves the applications untraced
	run -1 env -u LD_LIBRARY_PATH "$TRACE" --http_port=0 --pin_path="$PIN"
	[[ "$output" == *"cannot find libmooncake.so.0: libmooncake.so.0: cannot open shared object file"* ]]
	[[ "$output" == *"LD_LIBRARY_PATH"* ]]
	[ ! -e "$PIN" ]
}

@test "mooncake-trace refuses clearly without privileges" {
	command -v setpriv >/dev/null || skip "setpriv not installed"
	[ "$(id -u)" -eq 0 ] || skip "needs root to drop to nobody"
	run -1 setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all \
		"$TRACE" --http_port=0 --pin_path="$PIN"
	[[ "$output" == *"cannot trace: needs CAP_SYS_ADMIN"* ]]
	run -1 setpriv --reuid=nobody --regid=nogroup --clear-groups "$TRACE" --check=true
	[[ "$output" == *CAP_SYS_ADMIN* ]]
}

@test "a known workload is counted exactly: pinned maps, bpftool dump, /metrics" {
	need_bpf
	# leases of 3 s: the second get of k1 must find the first one's lease
	# live, also with slow (sanitized) clients on a loaded host
	start_master --lease_ttl_ms=3000
	start_node t1 --segment_size=16M
	start_trace   # after the daemons: attaches to them running; every ctl below starts later
	MHTTP=$(sed -n 's/.*ready: rpc on [^ ,]*, http on \([^ ,]*\),.*/\1/p' "$MC_DIR/master.log")
	for i in 1 2 3 4 5; do run -0 put_random "k$i" 1M; done          # N = 5 puts, shm
	run -0 get_compare k1; run -0 get_compare k1                     # one lease, extended
	MC_DISABLE_SHM=1 run -0 get_compare k2                           # one lease, over TCP
	xfer() { dump transfer_stats | jq "[.[] | select(.key.side == $1 and .key.op == $2 and .key.transport == $3) | .value.$4] | add // 0"; }
	# the master and the node hand their records over in groups, within
	# MC_TRACEBUF_FLUSH_MS, and their counts within MC_TRACEBUF_SUM_MS
	# (longer on a loaded host): wait for the last
	# ones, then count exactly (the clients' came as they exited)
	for _ in $(seq 1 50); do
		[ "$(dump lease_stats | jq '.[0].value.granted + .[0].value.extended')" -ge 3 ] &&
			[ "$(xfer 1 2 0 done)" -ge 1 ] && [ "$(dump put_stats | jq '.[0].value.ended')" -ge 5 ] &&
			break
		sleep 0.1
	done
	# the pinned maps, as bpftool prints them (BTF: named fields)
	[ "$(dump put_stats | jq '.[0].value.started')" -eq 5 ]
	[ "$(dump put_stats | jq '.[0].value.ended')" -eq 5 ]
	[ "$(dump put_stats | jq '.[0].value.bytes_ended')" -eq $((5 << 20)) ]
	[ "$(dump lease_stats | jq '.[0].value.granted')" -eq 2 ]
	[ "$(dump lease_stats | jq '.[0].value.extended')" -eq 1 ]
	[ "$(xfer 0 1 2 done)" -eq 5 ]            # client puts over shm
	[ "$(xfer 0 1 2 bytes)" -eq $((5 << 20)) ]
	[ "$(xfer 0 2 2 done)" -eq 2 ]            # client gets over shm
	[ "$(xfer 0 2 0 done)" -eq 1 ]            # client get over tcp
	[ "$(xfer 1 2 0 done)" -eq 1 ]            # the node served it
	[ "$(xfer 0 2 0 timed)" -eq 1 ]
	# the same through /metrics
	[ "$(metric mooncake_trace_puts_started_total)" -eq 5 ]
	[ "$(metric mooncake_trace_leases_granted_total)" -eq 2 ]
	[ "$(metric 'mooncake_trace_transfers_total{side="client",op="put",transport="shm"}')" -eq 5 ]
	[ "$(metric 'mooncake_trace_transfer_bytes_total{side="client",op="get",transport="tcp"}')" -eq $((1 << 20)) ]
	[ "$(metric 'mooncake_trace_transfer_duration_seconds_count{side="client",op="get",transport="tcp"}')" -eq 1 ]
	# leases run out 3 s after their last grant; the tracer's sweep counts them
	for _ in $(seq 1 50); do [ "$(metric mooncake_trace_leases_expired_total)" -eq 2 ] && break; sleep 0.1; done
	[ "$(dump lease_stats | jq '.[0].value.expired')" -eq 2 ]
	[ "$(metric mooncake_trace_lease_hold_seconds_count)" -eq 2 ]
	[ "$(metric mooncake_trace_leases_live)" -eq 0 ]

	# forced evictions: 30 more 1 MiB puts through a 16 MiB node
	ok=0
	for i in $(seq 1 30); do put_random "f$i" 1M >/dev/null 2>&1 && ok=$((ok + 1)); done
	for _ in $(seq 1 50); do
		[ "$(dump put_stats | jq '.[0].value.ended')" -ge $((5 + ok)) ] && break
		sleep 0.1
	done
	[ "$(dump put_stats | jq '.[0].value.ended')" -eq $((5 + ok)) ]
	# the housekeeping tick (1 s) may still be evicting down to the low
	# watermark: wait until the master's count holds still across two ticks
	evicted() { curl -sf "http://$MHTTP/metrics" | awk -v n="$1" 'index($1, n "{") == 1 { s += $2 } END { print s }'; }
	prev=-1
	for _ in $(seq 1 20); do
		mobj=$(evicted mooncake_master_evicted_objects_total)
		[ "$mobj" = "$prev" ] && break
		prev=$mobj
		sleep 2.2
	done
	mbytes=$(evicted mooncake_master_evicted_bytes_total)
	[ "$mobj" -ge 15 ]
	[ "$(dump evict_stats | jq '[.[].value.objects] | add')" -eq "$mobj" ]
	[ "$(dump evict_stats | jq '[.[].value.bytes] | add')" -eq "$mbytes" ]
	# reasons: put (the put path) or watermark (the tick, which wins with
	# slow clients); no quota is set, so never quota
	[ "$(dump evict_stats | jq '.[] | select(.key == 2) | .value.objects')" -eq 0 ]
	[ "$(dump evict_tenants | jq '[.[].value.objects] | add')" -eq "$mobj" ]
	sum=$(curl -sf "http://$TRACE_HTTP/metrics" | awk '$1 ~ /^mooncake_trace_evictions_total/ { s += $2 } END { print s }')
	[ "$sum" -eq "$mobj" ]
	[ "$(metric 'mooncake_trace_events_total{kind="evict"}')" -eq "$mobj" ]
	# every family exported is in the table of docs/metrics-trace.md
	for n in $(curl -sf "http://$TRACE_HTTP/metrics" | awk '/^# TYPE/ { print $3 }'); do
		grep -q "^| \`$n\` |" docs/metrics-trace.md || { echo "undocumented: $n"; false; }
	done
	# the exposition is valid
	if command -v promtool >/dev/null; then
		curl -sf "http://$TRACE_HTTP/metrics" | promtool check metrics
	fi

	# mooncakectl trace reads the pinned maps
	run -0 env MOONCAKE_TRACE_PINS="$PIN" "$CTL" -j trace lease
	[ "$(echo "$output" | jq .granted)" -eq 2 ]
	[ "$(echo "$output" | jq .expired)" -eq 2 ]
	run -0 env MOONCAKE_TRACE_PINS="$PIN" "$CTL" trace evict
	[[ "$output" == *"put "* || "$output" == *"watermark "* ]] && [[ "$output" == *"recent evictions:"* ]]
	[[ "$output" == *"mooncakectl"* ]] || [[ "$output" == *"mooncake-master"* ]]
	run -0 env MOONCAKE_TRACE_PINS="$PIN" "$CTL" -j trace transfer
	[ "$(echo "$output" | jq '[.transfers[] | select(.side == "client" and .op == "put") | .done] | add')" -eq $((5 + ok)) ]

	# stopping unpins
	kill -TERM "$TRACE_PID"
	wait "$TRACE_PID"
	TRACE_PID=
	[ ! -e "$PIN" ]
}

@test "processes started from a new file are found and attached; slow transfers are events" {
	need_bpf
	start_master
	start_node t2 --segment_size=16M
	start_trace --slow_transfer_us=0 --attach="$MASTER,$NODE" --probes=all
	cp "$CTL" "$MC_DIR/ctl-copy"   # a new inode no one attached to
	run -0 put_random a 64K
	[ "$(metric mooncake_trace_attached_files)" -eq 2 ]
	# mooncakectl trace --duration keeps the copy running: the scan finds it
	MOONCAKE_TRACE_PINS="$PIN" "$MC_DIR/ctl-copy" trace transfer --duration 2 >"$MC_DIR/live.out" 3>&- &
	live=$!
	for _ in $(seq 1 40); do grep -q "in $MC_DIR/ctl-copy (found running)" "$MC_DIR/trace.log" && break; sleep 0.05; done
	grep -q "attached 1 probe(s) in $MC_DIR/ctl-copy (found running)" "$MC_DIR/trace.log"
	[ "$(metric mooncake_trace_attached_files)" -eq 3 ]
	"$MC_DIR/ctl-copy" --rpc "$MASTER_ADDR" object get a "$MC_DIR/out"
	cmp "$MC_DIR/out" "$(_mc_file a)"
	wait "$live"
	# the live view saw the get of the interval, as a histogram and a slow event
	grep -q "client get over shm: 1 started, 1 done, 0 errors, 65536 bytes, 1 slow" "$MC_DIR/live.out"
	grep -q "usecs" "$MC_DIR/live.out"
	grep -q "slow   client get shm" "$MC_DIR/live.out"
	# the ctl that did the put was not attached (only master and node were, and
	# the copy): the client-side put is not counted, the master's is
	[ "$(metric mooncake_trace_puts_ended_total)" -eq 1 ]
	[ "$(metric 'mooncake_trace_transfers_total{side="client",op="put",transport="shm"}')" -eq 0 ]
	[ "$(metric 'mooncake_trace_slow_transfers_total{side="client",op="get",transport="shm"}')" -eq 1 ]
	[ "$(metric 'mooncake_trace_events_total{kind="slow_transfer"}')" -eq 1 ]
	grep -q "slow transfer: pid .* client get over shm, 65536 bytes" "$MC_DIR/trace.log"
}

@test "mooncakectl trace attaches by itself when no tracer runs" {
	need_bpf
	start_master
	start_node t3 --segment_size=16M
	run -0 put_random b 4K
	MOONCAKE_TRACE_PINS=/sys/fs/bpf/mctest-none-$$ MOONCAKE_TRACE_SCAN_UNDER="$MC_DIR/" "$CTL" trace transfer --duration 2 \
		>"$MC_DIR/self.out" 2>"$MC_DIR/self.err" 3>&- &
	live=$!
	# it says so once attached (it counts from then on)
	for _ in $(seq 1 200); do grep -q "attached" "$MC_DIR/self.err" && break; sleep 0.05; done
	grep -q "no tracer running: attached 9 probe(s) in 4 file(s)" "$MC_DIR/self.err"
	run -0 get_compare b
	wait "$live"
	grep -q "client get over shm: 1 started, 1 done, 0 errors, 4096 bytes" "$MC_DIR/self.out"
	[ -z "$(ls -d /sys/fs/bpf/mooncakectl-* 2>/dev/null)" ]   # its private pins are gone
	run -1 env MOONCAKE_TRACE_PINS=/nonexistent setpriv --reuid=nobody --regid=nogroup \
		--clear-groups --inh-caps=-all "$CTL" trace lease
	[[ "$output" == *"cannot attach: needs CAP_SYS_ADMIN"* ]]
}

@test "the kernel's view: TCP retransmissions counted per connection (tracepoint)" {
	need_bpf
	command -v python3 >/dev/null || skip "python3 not installed"
	start_trace --scan_under=/nonexistent/
	# a listener that never accepts, with a backlog of 0: the kernel drops
	# the SYNs past the queue and the connecting side retransmits them
	port=$(python3 -c '
import socket, time
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(0)
print(l.getsockname()[1], flush=True)
cs = []
for i in range(4):
    c = socket.socket(); c.setblocking(False)
    try: c.connect(("127.0.0.1", l.getsockname()[1]))
    except BlockingIOError: pass
    cs.append(c)
time.sleep(1.6)
')
	n=$(curl -sf "http://$TRACE_HTTP/metrics" |
		awk -v r="remote=\"127.0.0.1:$port\"}" 'index($1, "mooncake_trace_tcp_retransmits_total{") == 1 && index($1, r) { s += $2 } END { print s + 0 }')
	[ "$n" -ge 1 ]
	[ "$(bpftool map dump pinned "$PIN/tcp_retrans" | jq --argjson p "$port" '[.[] | select(.key.dport == $p) | .value] | add')" -eq "$n" ]
}
