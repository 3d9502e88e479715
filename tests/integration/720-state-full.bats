#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# A full state_dir (issue 13, "Durability errors are honest"): the master's
# state_dir on a small tmpfs, filled up.  Puts whose oplog record cannot be
# written fail and are not readable, /health says degraded with the reason,
# the metric and one log line say it; once space is back the oplog resumes
# by itself (no restart) and puts succeed; after kill -9 and a restart only
# the acknowledged objects are there.
bats_require_minimum_version 1.5.0

load helpers

# `make test-root`: mounting a tmpfs needs root.
# bats file_tags=root

setup() {
	mc_init
	[ -x "$NODE" ] && [ -x "$CTL" ] || skip "mooncake-node / mooncakectl not built"
	mc_may_use_root || skip "needs root (mounts a tmpfs)"
	ST=$MC_DIR/state
	mkdir -p "$ST"
	mount -t tmpfs -o size=2M tmpfs "$ST" || skip "cannot mount a tmpfs"
}

teardown() {
	stop_all
	umount "$ST" 2>/dev/null || true
}

health() { curl -s -o "$MC_DIR/health.json" -w '%{http_code}' "http://$MASTER_HTTP/health"; }

@test "state_dir full: failed puts are not visible, the oplog resumes, a restart keeps only acknowledged puts" {
	port=$(free_port)
	start_master --rpc_port="$port" --state_dir="$ST" --snapshot_interval_s=0
	start_node n1
	put_random k0 4K
	# Fill the file system, then put until one fails (the oplog file's last
	# page may still take a few records).
	dd if=/dev/zero of="$ST/filler" bs=64k 2>/dev/null || true
	ok=(k0) failed=
	for i in $(seq 1 400); do
		if put_random "f$i" 1K 2>"$MC_DIR/put.err"; then
			ok+=("f$i")
		else
			failed=f$i
			break
		fi
	done
	[ -n "$failed" ]
	grep -q PERSISTENT_FAIL "$MC_DIR/put.err" || grep -qi "durable\|persist" "$MC_DIR/put.err"
	run ctl object get "$failed" "$MC_DIR/out"
	[ "$status" -ne 0 ]
	# refused while failed, and said so
	run put_random g1 1K
	[ "$status" -ne 0 ]
	[ "$(health)" = 503 ]
	grep -q '"degraded"' "$MC_DIR/health.json"
	grep -q 'No space left' "$MC_DIR/health.json"
	curl -s "http://$MASTER_HTTP/metrics" | grep -qx 'mooncake_master_oplog_failed 1'
	# one line per failure episode (a resume attempt under load may fail once more), no flood
	# (written by the flusher thread, maybe just after the reply)
	for _ in $(seq 1 50); do grep -q 'oplog write failed' "$MC_DIR/master.log" && break; sleep 0.1; done
	n=$(grep -c 'oplog write failed' "$MC_DIR/master.log" || true)
	[ "$n" -ge 1 ] && [ "$n" -le 3 ]
	# space comes back: the oplog resumes by itself
	rm -f "$ST/filler"
	for _ in $(seq 1 50); do [ "$(health)" = 200 ] && break; sleep 0.2; done
	[ "$(health)" = 200 ]
	grep -q 'oplog resumed' "$MC_DIR/master.log"
	put_random after 4K
	ok+=(after)
	for k in "${ok[@]}"; do get_compare "$k"; done
	# kill -9 and restart: what was acknowledged is there, the failed put is not
	kill -9 "$MASTER_PID"
	wait "$MASTER_PID" 2>/dev/null || true
	start_master --rpc_port="$port" --state_dir="$ST" --snapshot_interval_s=0
	for _ in $(seq 1 100); do ctl object get after "$MC_DIR/out" >/dev/null 2>&1 && break; sleep 0.1; done
	for k in "${ok[@]}"; do get_compare "$k"; done
	run ctl object get "$failed" "$MC_DIR/out"
	[ "$status" -ne 0 ]
}
