#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# oplog = etcd, against a real etcd on loopback (Debian etcd-server):
# recovery from etcd alone, leader election with standbys waiting, kill -9
# and SIGSTOP of the leader under load (nothing acknowledged lost, nothing
# removed comes back, the paused leader acknowledges nothing), etcd
# unreachable (mutations refused, /health 503, back after), compaction,
# the HTTP metadata server's keys on the new leader; a client's get during
# a failover waits for the new leader (failover_wait_ms), then fails cleanly.
# Each master has its own RPC port; nodes, mooncakectl and mc-load get the
# list of all of them (only the leader listens).  With HA_SHARED=1 they
# share one port instead (a new leader waits for it).
bats_require_minimum_version 1.5.0

load helpers
load etcd

setup() {
	etcd_setup
}

teardown() {
	stop_all
}

@test "oplog=etcd: --help lists the etcd options; a bad endpoint is refused at start" {
	run "$MASTER" --help
	for o in etcd_endpoints cluster_id etcd_lease_ttl_s; do
		[[ "$output" == *"--$o="* ]] || { echo "missing $o"; false; }
	done
	run -2 "$MASTER" --oplog=etcd --etcd_endpoints=, --state_dir="$MC_DIR/x" --rpc_port=0 --http_port=0
	[[ "$output" == *"etcd_endpoints"* ]]
	run -2 "$MASTER" --oplog=etcd --cluster_id=a/b --state_dir="$MC_DIR/x" --rpc_port=0 --http_port=0
	[[ "$output" == *"cluster_id"* ]]
}

@test "oplog=etcd: kill -9 of the master; a master with an empty state_dir recovers everything acknowledged from etcd (more batches than one listing page)" {
	start_etcd
	HA_SHARED=1 ha_ports
	start_ha a
	wait_leader a
	[ "$(health a | jq -r .role)" = leader ]
	start_node n1 --segment_size=256M
	for i in 1 2 3 4; do run -0 put_random "k$i" 100K; done
	run -0 ctl object rm k2 --force
	# batches under the cluster's prefix, the leader key
	etcd_keys | grep -q '^/mooncake/t/leader$'
	etcd_keys | grep -q '^/mooncake/t/oplog/0000000000000000000[0-9]$'
	# more batches than the 1000 keys a new leader lists per range call
	start_load
	local batches=0
	for i in $(seq 1 300); do
		batches=$(etcd_keys | grep -c /oplog/)
		[ "$batches" -gt 1100 ] && break
		sleep 0.1
	done
	stop_load
	batches=$(etcd_keys | grep -c /oplog/)
	echo "# $batches batches in etcd" >&3
	[ "$batches" -gt 1100 ]
	kill -KILL "${HA_PID[a]}"
	_mc_reap "${HA_PID[a]}"
	start_ha b		# empty state_dir: everything comes from etcd
	wait_leader b
	grep -q "oplog in etcd: $batches batches" "$MC_DIR/master-b.log"
	# (cold: replayed at start; warm: followed while it campaigned)
	grep -Eq 'replayed [1-9][0-9]* oplog records|warm store held the log up to [1-9]' \
		"$MC_DIR/master-b.log"
	wait_readable k1
	get_compare k3
	get_compare k4
	run ctl object get k2 "$MC_DIR/k2.out"
	[ "$status" -ne 0 ]
	verify_load
}

@test "oplog=etcd: a standby waits (/health role standby, naming the leader), takes over after the leader's kill -9 under load, nothing acknowledged lost" {
	start_etcd
	start_ha a
	wait_leader a
	start_ha b
	local i
	for i in $(seq 1 50); do
		[ "$(health b | jq -r .leader 2>/dev/null)" != null ] && break
		sleep 0.1
	done
	health b | jq -e '.role == "standby" and (.leader | contains("rpc=127.0.0.1:'"${HA_RPC[a]}"'"))'
	! grep -q 'ready: rpc on' "$MC_DIR/master-b.log"
	etcd_keys | grep -q '^/mooncake/t/standby/'
	# b's RPC port names the leader; metadata ops answer NOT_LEADER
	run -0 "$RPC" "127.0.0.1:${HA_RPC[b]}" hello
	[[ "$output" == *"leader=127.0.0.1:${HA_RPC[a]}"* ]]
	run "$RPC" "127.0.0.1:${HA_RPC[b]}" exist k1
	[[ "$output" == *NOT_LEADER* ]]
	# mooncakectl status: every master of the list and its role; the
	# cluster's numbers from the leader
	local ml=http://127.0.0.1:${HA_HTTP[b]},http://127.0.0.1:${HA_HTTP[a]}
	run -0 "$CTL" --master "$ml" status
	echo "$output"
	[[ "$output" == *"127.0.0.1:${HA_HTTP[b]} (standby)"* ]]
	[[ "$output" == *"127.0.0.1:${HA_HTTP[a]} (leader)"* ]]
	grep -Eq '^role: +leader' <<<"$output"
	run -0 "$CTL" --master "$ml" --json status
	jq -e '(.masters | length) == 2 and .role == "leader"' <<<"$output"
	start_node n1 --segment_size=256M
	# a client given only the standby goes to the leader it names
	run -0 put_random viab 10K
	MASTER_ADDR=127.0.0.1:${HA_RPC[b]} get_compare viab
	MASTER_ADDR=127.0.0.1:${HA_RPC[b]} put_random viab2 10K
	get_compare viab2
	start_load
	sleep 2
	failover a b
	wait_put_ok b		# the node remounted on b, clients found it
	local t2
	t2=$(date +%s%N)
	echo "# failover (lease TTL 2 s): kill -9 to the standby serving $FAILOVER_MS ms, to a put through the list of masters $(((t2 - FAILOVER_T0) / 1000000)) ms" >&3
	[ "$FAILOVER_MS" -lt 10000 ]
	[ "$(health b | jq -r .role)" = leader ]
	grep -q "mounted 1 segment" "$MC_DIR/node-n1.log"
	sleep 1
	stop_load
	verify_load
}

@test "oplog=etcd: a get issued while no master leads (the leader killed, the standby not yet promoted) waits for the new leader's answer, and a get of an object whose node has not yet remounted on the new leader waits for the remount; with no master left it fails after failover_wait_ms" {
	start_etcd
	start_ha a
	wait_leader a
	start_ha b
	start_node n1 --segment_size=64M
	run -0 put_random fo1 10K
	run -0 put_random fo2 10K
	kill -STOP "$(node_pid n1)"	# its remount on b comes late (below)
	kill -KILL "${HA_PID[a]}"
	_mc_reap "${HA_PID[a]}"
	# at once: b waits for a's lease (2 s) and answers NOT_LEADER, a
	# refuses: nobody leads until b is promoted
	local early=no
	grep -q 'ready: rpc on' "$MC_DIR/master-b.log" || early=yes
	# the leader's answer, not RPC_FAIL / NOT_LEADER: a key never put is
	# OBJECT_NOT_FOUND
	run ctl object get none "$MC_DIR/none.out"
	echo "# the get began before b led: $early; $output" >&3
	[[ "$output" == *OBJECT_NOT_FOUND* ]]
	grep -q 'ready: rpc on' "$MC_DIR/master-b.log"
	# fo1 is read on b at once, before its node has remounted there (the
	# node is stopped until 2 s after the get began): b answers
	# UNAVAILABLE_IN_CURRENT_STATUS and the get waits for the remount, where
	# it used to fail with REPLICA_IS_NOT_READY
	(
		while [ ! -e "$MC_DIR/fo1.began" ]; do sleep 0.05; done
		sleep 2
		date +%s%N >"$MC_DIR/n1.cont"
		kill -CONT "$(node_pid n1)"
	) 3>&- &
	local cont=$!
	date +%s%N >"$MC_DIR/fo1.began"
	run get_compare fo1
	local rc=$status t1
	t1=$(date +%s%N)
	wait "$cont"
	echo "# fo1 read on b $(((t1 - $(cat "$MC_DIR/fo1.began")) / 1000000)) ms after the get began, its node stopped for the first $((($(cat "$MC_DIR/n1.cont") - $(cat "$MC_DIR/fo1.began")) / 1000000)) ms: $output" >&3
	[ "$rc" -eq 0 ]
	[ "$t1" -gt "$(cat "$MC_DIR/n1.cont")" ]
	wait_put_ok b
	get_compare fo1
	# every master gone: a clean error once the wait is over, not before
	kill -KILL "${HA_PID[b]}"
	_mc_reap "${HA_PID[b]}"
	local t0 ms
	t0=$(date +%s%N)
	MC_FAILOVER_WAIT_MS=1500 run get_compare fo2
	ms=$((($(date +%s%N) - t0) / 1000000))
	echo "# no master: the get failed after $ms ms: $output" >&3
	[ "$status" -ne 0 ]
	[[ "$output" == *RPC_FAIL* || "$output" == *"RPC failed"* ]]
	[ "$ms" -ge 1500 ] && [ "$ms" -lt 15000 ]
}

@test "oplog=etcd: a leader paused past its lease acknowledges nothing after it; the standby leads; the old leader stops" {
	start_etcd
	start_ha a
	wait_leader a
	start_ha b
	start_node n1 --segment_size=256M
	start_load
	sleep 1.5
	kill -STOP "${HA_PID[a]}"
	# b is elected once a's lease lapses (a still holds the shared port)
	local i
	for i in $(seq 1 150); do
		grep -q 'leader of cluster' "$MC_DIR/master-b.log" && break
		sleep 0.1
	done
	grep -q 'leader of cluster' "$MC_DIR/master-b.log"
	sleep 1
	kill -CONT "${HA_PID[a]}"
	# the old leader finds its lease gone and stops (exit 1); b serves
	wait_leader b 30
	for i in $(seq 1 100); do
		kill -0 "${HA_PID[a]}" 2>/dev/null || break
		sleep 0.1
	done
	! kill -0 "${HA_PID[a]}" 2>/dev/null
	local st=0
	wait "${HA_PID[a]}" || st=$?
	[ "$st" -eq 1 ]
	grep -Eq 'lost the leadership|not the leader any more' "$MC_DIR/master-a.log"
	wait_put_ok b
	sleep 1
	stop_load
	verify_load
}

@test "oplog=etcd: etcd down: mutations refused, /health 503 naming etcd, then RPC and REST NOT_LEADER, no resume snapshot forked meanwhile; etcd back: the same leader serves again" {
	start_etcd
	start_ha a
	wait_leader a
	start_node n1
	run -0 put_random k1 10K
	kill -KILL "$ETCD_PID"
	_mc_reap "$ETCD_PID"
	run put_random k2 10K
	[ "$status" -ne 0 ]
	local i
	for i in $(seq 1 50); do
		[ "$(health a | jq -r .status)" = degraded ] && break
		sleep 0.1
	done
	curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:${HA_HTTP[a]}/health" | grep -qx 503
	health a | jq -e '.role == "leader" and (.reason | contains("etcd"))'
	grep -q 'oplog: ' "$MC_DIR/master-a.log"
	# once its lease can lapse, it serves nobody: another master may lead
	for i in $(seq 1 50); do
		grep -q 'no lease renewal for a whole TTL' "$MC_DIR/master-a.log" && break
		sleep 0.1
	done
	MC_FAILOVER_WAIT_MS=500 run ctl object get k1 "$MC_DIR/k1.out"
	echo "$output"
	[ "$status" -ne 0 ]
	run -0 "$RPC" "127.0.0.1:${HA_RPC[a]}" hello
	[[ "$output" == *'leader=?'* ]]
	# REST too: reads answer 503 NOT_LEADER, naming why
	run -0 curl -s -w '\n%{http_code}' "http://127.0.0.1:${HA_HTTP[a]}/api/v1/objects/k1"
	echo "$output"
	[ "${lines[-1]}" = 503 ]
	[[ "$output" == *NOT_LEADER*"not sure it still leads"*etcd* ]]
	health a | jq -e '.role == "leader" and (.reason | contains("etcd"))'
	# no resume snapshot (a forked writer) while etcd is down: said once
	for i in $(seq 1 50); do
		grep -q 'no resume snapshot until' "$MC_DIR/master-a.log" && break
		sleep 0.1
	done
	[ "$(grep -c 'no resume snapshot until' "$MC_DIR/master-a.log")" -eq 1 ]
	start_etcd
	wait_put_ok a
	# logged once the resume returned: a put may get in before the line
	_mc_wait_line "$MC_DIR/master-a.log" '.*\(oplog resumed after snapshot\).*' "${HA_PID[a]}"
	[ "$(grep -c 'no resume snapshot until' "$MC_DIR/master-a.log")" -eq 1 ]
	[ "$(health a | jq -r .status)" = ok ]
	kill -0 "${HA_PID[a]}"
	get_compare k1
	curl -sf "http://127.0.0.1:${HA_HTTP[a]}/api/v1/objects/k1" >/dev/null
}

@test "oplog=etcd: etcd down for every master (the leader unsure of its lease, the standby saying it cannot reach etcd): a call through the list of both fails at once with NOT_LEADER, not after failover_wait_ms" {
	start_etcd
	start_ha a
	wait_leader a
	start_ha b
	start_node n1
	run -0 put_random k1 10K
	local i
	for i in $(seq 1 100); do
		"$RPC" "127.0.0.1:${HA_RPC[b]}" hello 2>/dev/null | grep -q "leader=127.0.0.1:${HA_RPC[a]}" && break
		sleep 0.1
	done
	"$RPC" "127.0.0.1:${HA_RPC[b]}" hello | grep -q "leader=127.0.0.1:${HA_RPC[a]}"
	kill -KILL "$ETCD_PID"
	_mc_reap "$ETCD_PID"
	for i in $(seq 1 100); do
		grep -q 'no lease renewal for a whole TTL' "$MC_DIR/master-a.log" &&
			"$RPC" "127.0.0.1:${HA_RPC[b]}" hello 2>/dev/null | grep -q "leader=?etcd 127.0.0.1:${HA_RPC[a]}" && break
		sleep 0.1
	done
	"$RPC" "127.0.0.1:${HA_RPC[a]}" hello | grep -q 'leader=?$'
	"$RPC" "127.0.0.1:${HA_RPC[b]}" hello | grep -q "leader=?etcd 127.0.0.1:${HA_RPC[a]}"
	# both answer, none can lead until etcd is back: no failover to wait for
	local t0 ms
	t0=$(date +%s%N)
	MASTER_ADDR=127.0.0.1:${HA_RPC[a]},127.0.0.1:${HA_RPC[b]} MC_FAILOVER_WAIT_MS=30000 \
		run ctl object get k1 "$MC_DIR/k1.out"
	ms=$((($(date +%s%N) - t0) / 1000000))
	echo "# every master cut off from etcd: the get failed after $ms ms: $output" >&3
	[ "$status" -ne 0 ]
	[[ "$output" == *NOT_LEADER* ]]
	[ "$ms" -lt 10000 ]
	# a master of the list that does not answer (c: never started) may
	# still come and lead: then the wait goes on (cut short here)
	t0=$(date +%s%N)
	MC_FAILOVER_WAIT_MS=1500 run ctl object get k1 "$MC_DIR/k1.out"
	ms=$((($(date +%s%N) - t0) / 1000000))
	[ "$status" -ne 0 ]
	[ "$ms" -ge 1500 ]
}

@test "oplog=etcd: a snapshot compacts the log in etcd; a restart from it still has everything" {
	start_etcd
	start_ha a
	wait_leader a
	start_node n1
	for i in 1 2 3; do run -0 put_random "c$i" 10K; done
	[ "$(etcd_keys | grep -c /oplog/)" -ge 3 ]
	curl -sf -X POST "http://127.0.0.1:${HA_HTTP[a]}/api/v1/snapshots" >/dev/null
	[ "$(etcd_keys | grep -c /oplog/)" -eq 0 ]
	etcd_keys | grep -q '^/mooncake/t/compacted$'
	run -0 put_random c4 10K
	[ "$(etcd_keys | grep -c /oplog/)" -ge 1 ]
	mc_stop_pid "${HA_PID[a]}"
	start_ha a
	wait_leader a
	for i in 1 2 3 4; do wait_readable "c$i"; done
	# an empty state_dir cannot replay a compacted log: refused, said why
	mc_stop_pid "${HA_PID[a]}"
	start_ha c
	local st=0
	wait "${HA_PID[c]}" || st=$?
	[ "$st" -ne 0 ]
	grep -q 'etcd holds records after' "$MC_DIR/master-c.log"
}

@test "oplog=etcd: a standby started after a compaction bootstraps from the leader's snapshot (admin API, token), follows the log warm while the leader compacts, and serves everything acknowledged after promotion; its admin port never refuses a connection" {
	printf 'sekret\n' >"$MC_DIR/token"
	local tok=(--admin_token_file="$MC_DIR/token") auth=(-H 'Authorization: Bearer sekret')
	start_etcd
	start_ha a "${tok[@]}"
	wait_leader a
	start_node n1 --segment_size=256M
	for i in 1 2 3; do run -0 put_random "w$i" 10K; done
	start_load
	sleep 1
	curl -sf -X POST "${auth[@]}" "http://127.0.0.1:${HA_HTTP[a]}/api/v1/snapshots" >/dev/null
	etcd_keys | grep -q '^/mooncake/t/compacted$'
	# the snapshot file is an admin's only
	local url=http://127.0.0.1:${HA_HTTP[a]}/api/v1/snapshots/newest/file
	[ "$(curl -s -o /dev/null -w '%{http_code}' "$url")" = 401 ]
	[ "$(curl -s -o "$MC_DIR/snap.db" -w '%{http_code}' "${auth[@]}" "$url")" = 200 ]
	[ "$(head -c 15 "$MC_DIR/snap.db")" = "SQLite format 3" ]
	run -0 put_random w4 10K
	sleep 1
	start_ha b "${tok[@]}"	# empty state_dir, the log compacted: bootstraps
	local i
	for i in $(seq 1 100); do
		health b >/dev/null && break
		sleep 0.05
	done
	# b's admin port, from now on through the store's install and the
	# promotion: never a connection refused (routes swapped on the socket)
	poll_http b
	for i in $(seq 1 100); do
		grep -q 'bootstrapped from the leader' "$MC_DIR/master-b.log" && break
		sleep 0.1
	done
	grep -q "bootstrapped from the leader's snapshot" "$MC_DIR/master-b.log"
	ls "$MC_DIR"/master-b/snapshots/snap-*.db
	# REST on the standby: reads from its own store, role standby;
	# mutations 503 NOT_LEADER naming the leader
	local sb=http://127.0.0.1:${HA_HTTP[b]}
	for i in $(seq 1 50); do
		curl -sf "$sb/api/v1/objects/w4" >/dev/null && break
		sleep 0.1
	done
	curl -sf "$sb/api/v1/objects/w4" | jq -e '.key == "w4"'
	curl -sf "$sb/api/v1/cluster" | jq -e '.role == "standby" and .objects >= 4'
	health b | jq -e '.role == "standby"'
	run -0 curl -s -w '\n%{http_code}' -X DELETE "${auth[@]}" "$sb/api/v1/objects/w1"
	[ "$(tail -n1 <<<"$output")" = 503 ]
	head -n1 <<<"$output" | jq -e '.error.code == "NOT_LEADER" and
		(.error.message | contains("rpc=127.0.0.1:'"${HA_RPC[a]}"'"))'
	# the leader compacts with a standby registered; the standby follows
	sleep 1
	curl -sf -X POST "${auth[@]}" "http://127.0.0.1:${HA_HTTP[a]}/api/v1/snapshots" >/dev/null
	run -0 put_random w5 10K
	sleep 2
	failover a b
	local promo
	promo=$(grep -o 'promotion: .*' "$MC_DIR/master-b.log")
	echo "# warm standby: kill -9 to serving $FAILOVER_MS ms (lease TTL 2 s); $promo" >&3
	[[ "$promo" == *"replayed the "*" records left in "* ]]
	wait_put_ok b
	poll_stop
	local polls refused
	polls=$(wc -l <"$MC_DIR/poll-b")
	refused=$(grep -cvx 0 "$MC_DIR/poll-b" || true)
	echo "# b's admin port through its store's install and promotion: $polls polls, $refused refused" >&3
	[ "$refused" -eq 0 ]
	[ "$(tail -n1 "$MC_DIR/poll-b")" = 0 ]
	sleep 1
	stop_load
	verify_load
	for i in 1 2 3 4 5; do get_compare "w$i"; done
}

@test "oplog=etcd: after a failover, a restored segment whose node never remounts is dropped client_ttl_ms later, with its transfer engine keys in /metadata; its keys can be put again" {
	start_etcd
	start_ha a --client_ttl_ms=3000
	wait_leader a
	start_node n1
	for i in 1 2 3; do run -0 put_random "r$i" 10K; done	# all on n1
	# the transfer engine's keys of n1's segment, and of a name never mounted
	local seg
	seg=$(curl -sf "http://127.0.0.1:${HA_HTTP[a]}/api/v1/segments" | jq -r '.segments[0].name')
	[ -n "$seg" ] && [ "$seg" != null ]
	echo '{"protocol":"tcp"}' >"$MC_DIR/desc.json"
	[ "$(md_put a "mooncake/ram/$seg" --data-binary @"$MC_DIR/desc.json")" = 200 ]
	[ "$(md_put a "mooncake/rpc_meta/$seg" --data-binary @"$MC_DIR/desc.json")" = 200 ]
	[ "$(md_put a "mooncake/ram/elsewhere" --data-binary @"$MC_DIR/desc.json")" = 200 ]
	start_node n2
	start_ha b --client_ttl_ms=3000
	kill_node n1 KILL
	kill -KILL "${HA_PID[a]}"
	_mc_reap "${HA_PID[a]}"
	wait_leader b 15
	local i
	for i in $(seq 1 80); do
		grep -q 'unmounted 1 restored segment' "$MC_DIR/master-b.log" && break
		sleep 0.1
	done
	grep -q 'unmounted 1 restored segment' "$MC_DIR/master-b.log"
	# gone for good: its keys went with it (metadata_cleanup), not the others
	[ "$(md_get b "mooncake/ram/$seg" "$MC_DIR/md.out")" = 404 ]
	[ "$(md_get b "mooncake/rpc_meta/$seg" "$MC_DIR/md.out")" = 404 ]
	[ "$(md_get b "mooncake/ram/elsewhere" "$MC_DIR/md.out")" = 200 ]
	local k
	for k in r1 r2 r3; do
		run ctl object get "$k" "$MC_DIR/x.out"
		[[ "$output" == *OBJECT_NOT_FOUND* ]]
		run -0 put_random "$k" 10K
		get_compare "$k"
	done
}

# md_put / md_get NAME KEY [curl args]: the HTTP metadata server of master NAME.
md_put() {
	local n=$1 k=$2
	shift 2
	curl -s -o /dev/null -w '%{http_code}' -X PUT "$@" "http://127.0.0.1:${HA_HTTP[$n]}/metadata?key=$k"
}
md_get() { curl -s -o "$3" -w '%{http_code}' "http://127.0.0.1:${HA_HTTP[$1]}/metadata?key=$2"; }

@test "oplog=etcd: the HTTP metadata server's keys (up to the largest value) reach the standby that takes over after the leader's kill -9" {
	start_etcd
	start_ha a
	wait_leader a
	start_ha b
	printf '{"name":"node-a:17000","protocol":"tcp"}' >"$MC_DIR/seg.json"
	head -c $((1048576 - 8192)) /dev/urandom >"$MC_DIR/max"	# the largest value: one etcd batch
	head -c 1000 /dev/urandom >"$MC_DIR/bin"
	[ "$(md_put a mooncake%2Fram%2Fnode-a --data-binary @"$MC_DIR/seg.json")" = 200 ]
	[ "$(md_put a big --data-binary @"$MC_DIR/max")" = 200 ]
	[ "$(md_put a %00bin%ff --data-binary @"$MC_DIR/bin")" = 200 ]
	[ "$(md_put a mooncake%2Frpc_meta%2Fa --data-binary '{"a":1}')" = 200 ]
	[ "$(md_put a gone --data-binary x)" = 200 ]
	[ "$(curl -s -o /dev/null -w '%{http_code}' -X DELETE "http://127.0.0.1:${HA_HTTP[a]}/metadata?key=gone")" = 200 ]
	etcd_keys | grep -q '^/mooncake/t/oplog/'
	kill -KILL "${HA_PID[a]}"
	_mc_reap "${HA_PID[a]}"
	wait_leader b 15
	[ "$(md_get b mooncake%2Fram%2Fnode-a "$MC_DIR/out")" = 200 ]
	cmp "$MC_DIR/seg.json" "$MC_DIR/out"
	[ "$(md_get b big "$MC_DIR/out")" = 200 ]
	cmp "$MC_DIR/max" "$MC_DIR/out"
	[ "$(md_get b %00bin%ff "$MC_DIR/out")" = 200 ]
	cmp "$MC_DIR/bin" "$MC_DIR/out"
	[ "$(md_get b gone "$MC_DIR/out")" = 404 ]
	[ "$(md_put b mooncake%2Frpc_meta%2Fa --data-binary '{"a":2}')" = 400 ]	# still taken
	[ "$(md_put b new --data-binary y)" = 200 ]
}

# start_etcd3: three members on loopback; sets ETCD (the list) and
# ETCD3_PID[0..2].  etcd_member I: (re)starts member I (its data kept).
declare -ga ETCD3_PID ETCD3_PEER ETCD3_CLIENT
etcd_member() {
	local i=$1 cl= j
	for j in 0 1 2; do cl+=${cl:+,}e$j=http://127.0.0.1:${ETCD3_PEER[j]}; done
	etcd --name "e$i" --data-dir "$MC_DIR/etcd$i" \
		--listen-client-urls "http://127.0.0.1:${ETCD3_CLIENT[i]}" \
		--advertise-client-urls "http://127.0.0.1:${ETCD3_CLIENT[i]}" \
		--listen-peer-urls "http://127.0.0.1:${ETCD3_PEER[i]}" \
		--initial-advertise-peer-urls "http://127.0.0.1:${ETCD3_PEER[i]}" \
		--initial-cluster "$cl" --initial-cluster-state new --log-level warn \
		</dev/null >>"$MC_DIR/etcd$i.log" 2>&1 3>&- &
	ETCD3_PID[i]=$!
	echo "${ETCD3_PID[i]} etcd$i" >>"$MC_DIR/pids"
}
etcd_quorum() {
	local i
	for i in $(seq 1 150); do
		ETCDCTL_API=3 etcdctl --endpoints="$ETCD" endpoint health >/dev/null 2>&1 && return 0
		ETCDCTL_API=3 etcdctl --endpoints="$ETCD" endpoint health 2>&1 | grep -q 'is healthy' &&
			return 0
		sleep 0.1
	done
	sed 's/^/# /' "$MC_DIR"/etcd?.log >&2
	return 1
}
start_etcd3() {
	local i
	ETCD=
	for i in 0 1 2; do
		ETCD3_PEER[i]=$(free_port)
		ETCD3_CLIENT[i]=$(free_port)
		ETCD+=${ETCD:+,}http://127.0.0.1:${ETCD3_CLIENT[i]}
	done
	for i in 0 1 2; do etcd_member "$i"; done
	etcd_quorum
}

# bats test_tags=slow
@test "oplog=etcd, three etcd members, three masters: kill -9 of the leader, then of one etcd member (writes go on), then of a second (no write acknowledged without a quorum); nothing acknowledged lost" {
	start_etcd3
	start_ha a
	wait_leader a
	start_ha b
	start_ha c
	start_node n1 --segment_size=256M
	start_load
	sleep 2
	local t0 t1 next= i
	t0=$(date +%s%N)
	kill -KILL "${HA_PID[a]}"
	_mc_reap "${HA_PID[a]}"
	for i in $(seq 1 150); do
		grep -q 'ready: rpc on' "$MC_DIR/master-b.log" && next=b && break
		grep -q 'ready: rpc on' "$MC_DIR/master-c.log" && next=c && break
		sleep 0.1
	done
	[ -n "$next" ]
	t1=$(date +%s%N)
	echo "# failover to $next: $(((t1 - t0) / 1000000)) ms" >&3
	wait_put_ok x1
	# one etcd member down: a quorum is left, writes go on
	kill -KILL "${ETCD3_PID[2]}"
	_mc_reap "${ETCD3_PID[2]}"
	sleep 2
	wait_put_ok x2
	# a second one down: no quorum, nothing is acknowledged
	kill -KILL "${ETCD3_PID[1]}"
	_mc_reap "${ETCD3_PID[1]}"
	sleep 3
	run put_random nq 10K
	[ "$status" -ne 0 ]
	stop_load || true
	# the quorum back: a leader serves, and nothing acknowledged is lost
	etcd_member 1
	etcd_member 2
	etcd_quorum
	wait_put_ok x3
	verify_load
	! get_compare nq 2>/dev/null
}
