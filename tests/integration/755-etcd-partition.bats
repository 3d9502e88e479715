#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# oplog = etcd: the leader cut off from etcd by the network (a partition),
# under load, repeated for several rounds.  Masters a and b each run in a
# network namespace of their own, $P-a and $P-b, whose eth0 is one end of
# a veth pair (10.231.78.2 and 10.231.79.2; the root namespace's ends are
# .1).  etcd, the node, mc-load and mooncakectl run in the root namespace;
# etcd listens on 10.231.78.3 only, a second address of the root end of
# a's pair, which b reaches through its default route (delivered locally:
# no forwarding).  The partition is a blackhole route to etcd's address in
# the leader's namespace: the leader still answers clients, and only its
# traffic to etcd is dropped.
# Each round checks:
#   - the standby leads within 10 s of the cut (failover time printed);
#   - the node and the load move to the new leader: a put through the
#     list of masters succeeds (that time is printed too);
#   - the cut-off leader acknowledges nothing once its lease can lapse: a
#     put sent to it alone answers NOT_LEADER (so does every op; its HELLO
#     names no leader), it commits no batch while the other leads, and (the history, from both masters' logs) its lease could
#     lapse and its last batch committed no later than the new leader's
#     term began: no overlapping leader periods;
#   - once the cut is healed, the old leader finds its lease gone and
#     stops (exit 1); it is started again as the next round's standby.
# At the end, mc-load's journal: 0 acknowledged puts lost, 0 acknowledged
# removes come back.  HA_PARTITION_ROUNDS sets the rounds (default 3).
bats_require_minimum_version 1.5.0

load helpers
load etcd

# `make test-root`: every test here needs root.
# bats file_tags=root

EIP=10.231.78.3

setup() {
	etcd_setup
	mc_may_use_root || skip "needs root (network namespaces); MC_TEST_NO_ROOT is set or not root"
	command -v ip >/dev/null || skip "needs iproute2 (ip)"
	P=mcp$$
	: >"$MC_DIR/netns"
	if ! ip netns add "$P-a" 2>"$MC_DIR/netns.err"; then
		skip "cannot make a network namespace (ip netns add: $(cat "$MC_DIR/netns.err"))"
	fi
	echo "$P-a" >>"$MC_DIR/netns"
	attach a 78
	attach b 79
	ip addr add "$EIP/24" dev "$P-a"
	HA_IP[a]=10.231.78.2 HA_EXEC[a]="ip netns exec $P-a"
	HA_IP[b]=10.231.79.2 HA_EXEC[b]="ip netns exec $P-b"
	ha_ports
	ETCD_IP=$EIP
	# off loopback, every daemon and client needs the cluster secret
	head -c 32 /dev/urandom | base64 >"$MC_DIR/secret"
	export MOONCAKE_CLUSTER_SECRET_FILE=$MC_DIR/secret
	SECRET=--cluster_secret_file=$MC_DIR/secret
}

# attach NAME NET: namespace $P-NAME (made here unless it exists) whose
# eth0 (10.231.NET.2/24, default route via .1) is a veth pair with $P-NAME
# (10.231.NET.1/24) in the root namespace.
attach() {
	local ns=$P-$1
	if ! ip netns list | grep -qw "$ns"; then
		ip netns add "$ns"
		echo "$ns" >>"$MC_DIR/netns"
	fi
	ip -n "$ns" link set lo up
	ip link add "$ns" type veth peer name eth0 netns "$ns"
	ip addr add "10.231.$2.1/24" dev "$ns"
	ip link set "$ns" up
	ip -n "$ns" addr add "10.231.$2.2/24" dev eth0
	ip -n "$ns" link set eth0 up
	ip -n "$ns" route add default via "10.231.$2.1"
}

teardown() {
	local rc=0
	stop_all || rc=$?
	mc_netns_del "$MC_DIR/netns"	# (and the root ends of their pairs)
	return "$rc"
}

# cut NAME / heal NAME: master NAME's packets to etcd are dropped / pass.
cut() { ip -n "$P-$1" route add blackhole "$EIP/32"; }
heal() { ip -n "$P-$1" route del blackhole "$EIP/32"; }

# unix_ms NAME PATTERN: N of the last "PATTERN unix ms N" in NAME's log.
unix_ms() {
	grep -o "$2 unix ms [0-9]*" "$MC_DIR/master-$1.log" | tail -n1 | grep -o '[0-9]*$'
}

batches() {
	curl -s "http://${HA_IP[$1]}:${HA_HTTP[$1]}/metrics" |
		awk '$1 == "mooncake_master_oplog_batches_total" { print $2 }'
}

wait_standby() {
	local i
	for i in $(seq 1 100); do
		[ "$(health "$1" | jq -r .role 2>/dev/null)" = standby ] && return 0
		sleep 0.1
	done
	echo "# master $1 is not a standby:" >&2
	tail -n 15 "$MC_DIR/master-$1.log" | sed 's/^/# /' >&2
	return 1
}

@test "oplog=etcd: the leader partitioned from etcd (network namespaces) under load, several rounds: it stops acknowledging once its lease can lapse, the standby leads within 10 s, no overlapping leader periods, nothing acknowledged lost" {
	start_etcd
	HA_ETCD[a]=$ETCD HA_ETCD[b]=$ETCD
	# each master reaches etcd, and the root namespace reaches each master
	ip netns exec "$P-b" curl -sf "$ETCD/health" | grep -q true
	start_ha a "$SECRET"
	wait_leader a
	start_ha b "$SECRET"
	wait_standby b
	start_node n1 --segment_size=256M "$SECRET"
	start_load
	sleep 1.5
	local round leader=a standby=b t0 ms times=() e d c n1 n2 i st
	for round in $(seq 1 "${HA_PARTITION_ROUNDS:-3}"); do
		# the standby is warm and the load goes through the leader
		run -0 put_random "before-$round" 10K
		t0=$(date +%s%N)
		cut "$leader"
		wait_leader "$standby" 15
		ms=$((($(date +%s%N) - t0) / 1000000))
		times+=("$ms")
		echo "# round $round: $leader cut off from etcd; $standby leads after $ms ms" >&3
		[ "$ms" -lt 10000 ]
		# the node and the clients leave the old leader (it answers
		# NOT_LEADER once its lease can lapse) for the new one, which
		# serves what was acknowledged
		[ "$(health "$standby" | jq -r .role)" = leader ]
		wait_put_ok "$round"
		echo "# round $round: cut to a put through the list of masters $((($(date +%s%N) - t0) / 1000000)) ms" >&3
		get_compare "before-$round"
		# the old leader refuses: its lease may have lapsed
		for i in $(seq 1 60); do
			grep -q 'no lease renewal for a whole TTL' "$MC_DIR/master-$leader.log" && break
			sleep 0.1
		done
		MASTER_ADDR=${HA_IP[$leader]}:${HA_RPC[$leader]} run put_random "old-$round" 10K
		echo "$output"
		[ "$status" -ne 0 ]
		[[ "$output" == *NOT_LEADER* ]]
		MC_RPC_SECRET_FILE=$MC_DIR/secret run "$RPC" "${HA_IP[$leader]}:${HA_RPC[$leader]}" hello
		echo "$output"
		[[ "$output" == *'leader=?'* ]]
		# the history: the old leader's lease could lapse, and its last
		# batch committed, before the new leader's term began
		e=$(unix_ms "$standby" 'leader of cluster [^;]*, from')
		d=$(unix_ms "$leader" 'the lease may lapse from')
		c=$(unix_ms "$leader" 'the last batch committed at')
		echo "# round $round: $leader's lease may lapse from $d, its last commit $c; $standby leads from $e" >&3
		[ -n "$e" ] && [ -n "$d" ] && [ -n "$c" ]
		[ "$d" -le "$e" ]
		[ "$c" -le "$e" ]
		# and it commits nothing while the new leader serves
		n1=$(batches "$leader")
		sleep 1
		n2=$(batches "$leader")
		[ -n "$n1" ] && [ "$n1" = "$n2" ]
		# healed: the old leader learns its lease is gone and stops
		heal "$leader"
		for i in $(seq 1 100); do
			kill -0 "${HA_PID[$leader]}" 2>/dev/null || break
			sleep 0.1
		done
		st=0
		wait "${HA_PID[$leader]}" || st=$?
		[ "$st" -eq 1 ]
		grep -Eq 'lost the leadership|not the leader any more' "$MC_DIR/master-$leader.log"
		# it comes back as the standby of the next round
		start_ha "$leader" "$SECRET"
		wait_standby "$leader"
		sleep 1
		t0=$leader leader=$standby standby=$t0
	done
	wait_put_ok end
	sleep 1
	stop_load
	verify_load
	printf '%s\n' "${times[@]}" | sort -n >"$MC_DIR/times"
	echo "# failover times (ms, cut to the standby serving, lease TTL 2 s): ${times[*]}; median $(sed -n "$(((${#times[@]} + 1) / 2))p" "$MC_DIR/times")" >&3
	for i in $(seq 1 "${HA_PARTITION_ROUNDS:-3}"); do get_compare "before-$i"; done
}
