#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Eviction under concurrent writers, end to end (issue 13): a master and one
# 64 MiB node, three client processes of four threads each (mc-churn) put
# into it far past its capacity for 8 s -- two with objects of 1 B to 1 MiB,
# one with 2 KiB objects as in the report -- and get, remove and test what
# they put, while admin evictions run beside them.  The master must survive,
# /health must answer all along, every read must return the right bytes or
# OBJECT_NOT_FOUND, and the accounting must stay within the capacity.
# Before the fix the master died with SIGSEGV in mc_offalloc_largest_free
# (evict_segment read the allocator's bins without the segment lock).
bats_require_minimum_version 1.5.0

load helpers

SECONDS_OF_LOAD=8

setup() {
	mc_init
	[ -x "$NODE" ] && [ -x "$O/tests/tools/mc-churn" ] || skip "mooncake-node / mc-churn not built"
	start_master --oplog_sync=false --workers=4
	start_node ev --segment_size=64M
}

teardown() {
	stop_all
}

# metric NAME [LABELS]: the value of a master metric (0 if absent).
metric() {
	curl -sf --max-time 5 "http://$MASTER_HTTP/metrics" |
		awk -v n="$1" -v l="${2:-}" '$1 == n l { v = $2 } END { print v + 0 }'
}

@test "concurrent puts into a full 64 MiB cache: the master survives, reads are right, /health answers" {
	churn=$O/tests/tools/mc-churn
	pids=()
	timeout 60 "$churn" "$MASTER_ADDR" $SECONDS_OF_LOAD 4 1 1048576 >"$MC_DIR/churn-1.out" 2>&1 &
	pids+=($!)
	timeout 60 "$churn" "$MASTER_ADDR" $SECONDS_OF_LOAD 4 1 1048576 >"$MC_DIR/churn-2.out" 2>&1 &
	pids+=($!)
	timeout 60 "$churn" "$MASTER_ADDR" $SECONDS_OF_LOAD 4 2048 2048 >"$MC_DIR/churn-3.out" 2>&1 &
	pids+=($!)
	# Beside them: /health twice a second, and an admin eviction now and then.
	health_fail=0 rounds=0
	end=$((SECONDS + SECONDS_OF_LOAD + 2))
	while [ "$SECONDS" -lt "$end" ]; do
		curl -sf --max-time 3 "http://$MASTER_HTTP/health" >/dev/null || health_fail=$((health_fail + 1))
		if [ $((rounds % 4)) -eq 3 ]; then
			ctl evict --ratio 0.5 >/dev/null || health_fail=$((health_fail + 1))
		fi
		rounds=$((rounds + 1))
		sleep 0.5
	done
	rc=0
	for p in "${pids[@]}"; do wait "$p" || rc=1; done
	for f in "$MC_DIR"/churn-*.out; do echo "# $(basename "$f"): $(cat "$f")"; done
	kill -0 "$MASTER_PID" || { echo "# the master died:"; tail -n 20 "$MC_DIR/master.log"; false; }
	[ "$rc" -eq 0 ]
	[ "$health_fail" -eq 0 ]
	run -0 curl -sf --max-time 5 "http://$MASTER_HTTP/health"
	# It was full: puts evicted, and far more went through than fits.
	evicted=$(metric mooncake_master_evicted_objects_total '{reason="put",tier="memory"}')
	echo "# evicted by puts: $evicted objects"
	[ "$evicted" -gt 100 ]
	puts=$(awk '{ s += $3 } END { print s }' "$MC_DIR"/churn-*.out)
	[ "$puts" -gt 1000 ]
	# Accounting stays within the capacity, and a new put still fits.
	run -0 ctl status
	echo "$output" | sed 's/^/# /'
	# A 1 MiB block may have to wait for the leases of the churn's last reads
	# (a forced remove keeps a leased object's bytes too): within one lease
	# (lease_ttl_ms, 10 s) it fits.
	t0=$SECONDS
	until put_random after 1M >/dev/null 2>&1; do
		[ $((SECONDS - t0)) -lt 15 ] || { run -0 put_random after 1M; break; }
		sleep 0.5
	done
	echo "# the 1 MiB put fit after $((SECONDS - t0)) s"
	run -0 get_compare after
}
