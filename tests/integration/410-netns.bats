#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# The master, two nodes and the client each in its own network namespace,
# connected by veth pairs to a bridge in a "switch" namespace.  Everything
# (namespaces, links, addresses 10.231.$NET.0/24) lives inside namespaces the
# test creates, named mct$$-*, and teardown deletes them.  /dev/shm is shared
# across network namespaces; the client sets MC_DISABLE_SHM=1 anyway.
bats_require_minimum_version 1.5.0

load helpers

# `make test-root`: every test here needs root.
# bats file_tags=root

NET=77

setup() {
	mc_init
	[ -x "$NODE" ] && [ -x "$CTL" ] || skip "mooncake-node / mooncakectl not built"
	[ "$(id -u)" = 0 ] || skip "needs root (network namespaces)"
	command -v ip >/dev/null || skip "needs iproute2 (ip)"
	P=mct$$
	: >"$MC_DIR/netns"
	if ! ip netns add "$P-sw" 2>"$MC_DIR/netns.err"; then
		skip "ip netns add failed: $(cat "$MC_DIR/netns.err")"
	fi
	echo "$P-sw" >>"$MC_DIR/netns"
	ip -n "$P-sw" link set lo up
	ip -n "$P-sw" link add br0 type bridge
	ip -n "$P-sw" link set br0 up
	# name host: its address
	local h
	for h in m:1 n1:11 n2:12 c:100; do
		attach "${h%%:*}" "10.231.$NET.${h##*:}"
	done
	MIP=10.231.$NET.1 N1IP=10.231.$NET.11 N2IP=10.231.$NET.12
	export MC_DISABLE_SHM=1
	# wait until the client reaches every host over the bridge (no ping here)
	local i ok
	for i in $(seq 1 100); do
		ok=1
		for h in $MIP $N1IP $N2IP; do
			ip netns exec "$P-c" timeout 1 bash -c "exec 5<>/dev/tcp/$h/9" 2>&1 |
				grep -q 'refused' || ok=
		done
		[ -n "$ok" ] && break
		sleep 0.05
	done
	[ -n "$ok" ] || { echo "# the bridge does not pass traffic" >&2; return 1; }
	# across hosts every daemon and client needs the cluster secret
	head -c 32 /dev/urandom | base64 >"$MC_DIR/secret"
	export MOONCAKE_CLUSTER_SECRET_FILE=$MC_DIR/secret
	local s=--cluster_secret_file=$MC_DIR/secret
	MC_EXEC="ip netns exec $P-m" MC_MASTER_IP=$MIP start_master --client_ttl_ms=1500 "$s"
	MC_EXEC="ip netns exec $P-n1" MC_NODE_IP=$N1IP start_node n1 --segment_size=32M "$s"
	MC_EXEC="ip netns exec $P-n2" MC_NODE_IP=$N2IP start_node n2 --segment_size=32M "$s"
	MC_CTL_EXEC="ip netns exec $P-c"
}

# attach NAME ADDR: namespace $P-NAME whose eth0 (ADDR/24) is a veth pair
# with p-NAME on the switch's bridge.
attach() {
	local ns=$P-$1
	ip netns add "$ns"
	echo "$ns" >>"$MC_DIR/netns"
	ip -n "$ns" link set lo up
	ip -n "$P-sw" link add "p-$1" type veth peer name eth0 netns "$ns"
	ip -n "$P-sw" link set "p-$1" master br0 up
	ip -n "$ns" addr add "$2/24" dev eth0
	ip -n "$ns" link set eth0 up
}

teardown() {
	local rc=0
	stop_all || rc=$?
	mc_netns_del "$MC_DIR/netns"	# (anything still running in them: killed)
	return $rc
}

@test "put and get 1 MiB objects across namespaces; endpoints are the nodes' addresses" {
	# (not $i: bats 1.8's run -N clobbers a global i)
	for k in 1 2 3; do
		run -0 put_random "ns-$k" $((1 << 20))
		[ "$output" = "stored 'ns-$k' ($((1 << 20)) bytes)" ]
		get_compare "ns-$k"
		run -0 ctl -o json object stat "ns-$k"
		ep=$(echo "$output" | jq -r '.replicas[0].endpoint')
		[ "$ep" = "$(node_endpoint n1)" ] || [ "$ep" = "$(node_endpoint n2)" ]
	done
	[[ "$(node_endpoint n1)" == "$N1IP":* ]]
	[[ "$(node_endpoint n2)" == "$N2IP":* ]]
	# and nothing is reachable on the client's own loopback
	run -1 ctl --rpc "127.0.0.1:${MASTER_ADDR##*:}" object exist ns-1
}

@test "--replicas 2 across namespaces: stat lists both nodes' addresses; both serve" {
	run -0 put_random rep $((1 << 20)) --replicas 2
	run -0 ctl -o json object stat rep
	j=$output
	[ "$(echo "$j" | jq -r '.replicas | length')" = 2 ]
	[ "$(echo "$j" | jq -r '[.replicas[].endpoint | split(":")[0]] | sort | join(" ")')" = "$N1IP $N2IP" ]
	[ "$(echo "$j" | jq -r '[.replicas[].endpoint] | sort | join(" ")')" = \
		"$(printf '%s\n' "$(node_endpoint n1)" "$(node_endpoint n2)" | sort | tr '\n' ' ' | sed 's/ $//')" ]
	get_compare rep
}

@test "a replica's node unreachable (link down, SYNs dropped): get falls back to the other replica" {
	run -0 put_random rep $((1 << 20)) --replicas 2
	run -0 ctl -o json object stat rep
	first=$(node_of_endpoint "$(echo "$output" | jq -r '.replicas[0].endpoint')")
	# cut the node listed first, so the client tries it first
	ip -n "$P-sw" link set "p-$first" down
	run -0 timeout 30 bash -c "$(declare -f ctl get_compare _mc_file); CTL='$CTL' MASTER_ADDR='$MASTER_ADDR' MC_DIR='$MC_DIR' MC_CTL_EXEC='$MC_CTL_EXEC'; get_compare rep"
	ip -n "$P-sw" link set "p-$first" up
}

@test "a node cut off from the master expires; its replica is dropped" {
	run -0 put_random cut $((1 << 20)) --replicas 2
	ip -n "$P-sw" link set p-n2 down
	sleep 2.5
	run -0 ctl -o json object stat cut
	[ "$(echo "$output" | jq -r '.replicas | length')" = 1 ]
	[ "$(echo "$output" | jq -r '.replicas[0].endpoint')" = "$(node_endpoint n1)" ]
	get_compare cut
	# back on the bridge, n2 mounts again within a few seconds
	ip -n "$P-sw" link set p-n2 up
	n=0
	for i in $(seq 1 50); do
		put_random "cut-$i" 4096 --replicas 2 >/dev/null
		n=$(ctl -o json object stat "cut-$i" | jq -r '.replicas | length')
		[ "$n" = 2 ] && break
		sleep 0.2
	done
	[ "$n" = 2 ]
	get_compare "cut-$i"
}

@test "without a cluster secret, a master serves no peer on another host" {
	local log=$MC_DIR/open.log
	ip netns exec "$P-m" "$MASTER" --rpc_address=0.0.0.0 --rpc_port=0 --http_port=0 \
		--state_dir="$MC_DIR/open" </dev/null 2>"$log" 3>&- &
	echo "$! open-master" >>"$MC_DIR/pids"
	local port
	port=$(_mc_wait_line "$log" '.*ready: rpc on [^ ,]*:\([0-9]*\),.*' "$!")
	grep -q 'NO CLUSTER SECRET' "$log"
	# the cluster secret does not help: this master has none to check
	run -1 ip netns exec "$P-c" "$CTL" --rpc "$MIP:$port" object exist k
	MOONCAKE_CLUSTER_SECRET_FILE= run -1 ip netns exec "$P-c" "$CTL" --rpc "$MIP:$port" object exist k
	grep -q 'refused a connection from a non-loopback peer' "$log"
	# on its own host it serves
	run -4 ip netns exec "$P-m" env MOONCAKE_CLUSTER_SECRET_FILE= "$CTL" --rpc "127.0.0.1:$port" object exist k
}
