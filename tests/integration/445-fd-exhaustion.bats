#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Descriptor exhaustion (issue 13): a peer (127.0.0.2) opens hundreds of
# RPC connections to a master whose open-file limit is small.  /health and
# new RPC clients from another address keep being served, the master does
# not spin on accept(), and its log stays short.  Fails on a server with
# no connection cap and no accept back-off (a full core, millions of lines).
bats_require_minimum_version 1.5.0

load helpers

setup() {
	mc_init
	[ -x "$NODE" ] && [ -x "$CTL" ] || skip "mooncake-node and mooncakectl are needed"
	command -v python3 >/dev/null && command -v curl >/dev/null && command -v prlimit >/dev/null ||
		skip "python3, curl and prlimit are needed"
	printf 'v-%s\n' "$RANDOM" >"$MC_DIR/data/v"
}

teardown() {
	[ -n "${FLOOD_PID:-}" ] && kill "$FLOOD_PID" 2>/dev/null
	stop_all
}

# flood N SECONDS: N connections from 127.0.0.2 to the master's RPC port,
# held SECONDS, in the background; returns once they are all attempted.
flood() {
	python3 - "${MASTER_ADDR##*:}" "$1" "$2" >"$MC_DIR/flood.out" 2>&1 <<'EOF' &
import socket, sys, time
port, n, hold = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
socks = []
for i in range(n):
    s = socket.socket()
    s.settimeout(1)
    try:
        s.bind(("127.0.0.2", 0))
        s.connect(("127.0.0.1", port))
        socks.append(s)
    except OSError:
        s.close()
print("connected", len(socks), flush=True)
time.sleep(hold)
EOF
	FLOOD_PID=$!
	local i
	for i in $(seq 1 200); do
		grep -q connected "$MC_DIR/flood.out" && return 0
		sleep 0.05
	done
	echo "# the flood did not finish connecting: $(cat "$MC_DIR/flood.out")" >&2
	return 1
}

# cpu_ticks PID: user + system clock ticks so far.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# busy_percent PID SECONDS: the CPU share PID used over SECONDS.
busy_percent() {
	local t0 t1 hz
	hz=$(getconf CLK_TCK)
	t0=$(cpu_ticks "$1")
	sleep "$2"
	t1=$(cpu_ticks "$1")
	echo $(( (t1 - t0) * 100 / (hz * $2) ))
}

health() { curl -s -m 2 -o /dev/null -w '%{http_code}' "http://$MASTER_HTTP/health"; }

@test "a connection flood at a small fd limit: /health and other clients keep being served" {
	MC_EXEC="prlimit --nofile=256:256 --" start_master
	start_node n1
	flood 400 8
	grep -q 'connected' "$MC_DIR/flood.out"
	[ "$(health)" = 200 ]
	# a new client from 127.0.0.1 gets through (the flood's address is capped)
	run -0 ctl object put k "$MC_DIR/data/v"
	run -0 ctl object get k -
	[ "$output" = "$(cat "$MC_DIR/data/v")" ]
	local busy
	busy=$(busy_percent "$MASTER_PID" 2)
	echo "# master busy ${busy}% during the flood" >&3
	[ "$busy" -lt 30 ]
	grep -q 'refused a connection.*rpc_max_connections_per_peer' "$MC_DIR/master.log"
	[ "$(wc -l <"$MC_DIR/master.log")" -lt 40 ]
}

@test "out of descriptors (EMFILE): accept backs off, the log stays short, service comes back" {
	MC_EXEC="prlimit --nofile=128:128 --" start_master --rpc_max_connections=100000 \
		--rpc_max_connections_per_peer=100000 --rpc_idle_timeout_ms=1500
	start_node n1
	run -0 ctl object put k "$MC_DIR/data/v"
	flood 300 5
	local busy
	busy=$(busy_percent "$MASTER_PID" 2)
	echo "# master busy ${busy}% at EMFILE" >&3
	[ "$busy" -lt 30 ]
	grep -q 'accept: Too many open files.*retrying in' "$MC_DIR/master.log"
	[ "$(grep -c 'accept:' "$MC_DIR/master.log")" -le 2 ]
	[ "$(wc -l <"$MC_DIR/master.log")" -lt 40 ]
	# the node's established link kept working through it
	run -0 curl -sf -m 2 "http://$MASTER_HTTP/api/v1/clients"
	# connections that never finish a handshake are closed: service comes back
	local i ok=
	for i in $(seq 1 100); do
		[ "$(health)" = 200 ] && ctl object get k - >/dev/null 2>&1 && { ok=1; break; }
		sleep 0.1
	done
	[ -n "$ok" ]
	kill "$FLOOD_PID" 2>/dev/null || true
	run -0 ctl object get k -
	[ "$output" = "$(cat "$MC_DIR/data/v")" ]
	grep -q 'silent_ms' <<<"$(curl -sf "http://$MASTER_HTTP/api/v1/clients")"
}
