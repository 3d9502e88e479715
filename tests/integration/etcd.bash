# SPDX-License-Identifier: Apache-2.0
# etcd.bash - helpers of the oplog = etcd tests (750-etcd.bats,
# 755-etcd-partition.bats); load after helpers.bash.
#   start_etcd             one etcd member; $ETCD its client URL ($ETCD_IP:
#                          the address it listens on, default 127.0.0.1)
#   ha_ports               RPC/HTTP ports of masters a, b, c; $MASTER_ADDR
#   start_ha NAME [opts]   master NAME with oplog = etcd; $HA_IP[NAME] (its
#                          address), $HA_EXEC[NAME] (a command prefix, e.g.
#                          "ip netns exec NS") and $HA_ETCD[NAME] (its
#                          etcd_endpoints) override the defaults
#   wait_leader NAME [S]   NAME serves as leader (logs "ready")
#   health NAME            its /health
#   failover OLD NEW       kill -9 of OLD, NEW serves; $FAILOVER_MS
#   wait_put_ok TAG        a put through $MASTER_ADDR succeeds (20 s)
#   etcd_keys              the keys under /mooncake/t/
#   poll_http NAME         connects to NAME's admin port every 10 ms in the
#                          background (a /health every 20th), each result
#                          into $MC_DIR/poll-NAME (0 ok, else refused);
#                          poll_stop ends it
#   etcd_setup             a test's setup: mc_init, skips without the
#                          binaries, $MC_DIR/probe (1000 random bytes)

etcd_setup() {
	mc_init
	[ -x "$NODE" ] && [ -x "$CTL" ] || skip "mooncake-node / mooncakectl not built"
	command -v etcd >/dev/null && command -v etcdctl >/dev/null ||
		skip "etcd not installed (Debian etcd-server, etcd-client; packaging/deps.sh test)"
	command -v curl >/dev/null && command -v jq >/dev/null || skip "curl and jq are needed"
	head -c 1000 /dev/urandom >"$MC_DIR/probe"
}

# start_etcd: one member on loopback ports (free_port), data in $MC_DIR/etcd;
# sets $ETCD (its client URL).  Again after a kill: the same ports and data.
start_etcd() {
	if [ -z "${ETCD_PORTS:-}" ]; then
		ETCD_PORTS="$(free_port) $(free_port)"
	fi
	local cp=${ETCD_PORTS% *} pp=${ETCD_PORTS#* } ip=${ETCD_IP:-127.0.0.1}
	ETCD=http://$ip:$cp
	_mc_new_log "$MC_DIR/etcd.log"
	etcd --name m0 --data-dir "$MC_DIR/etcd" --listen-client-urls "$ETCD" \
		--advertise-client-urls "$ETCD" --listen-peer-urls "http://$ip:$pp" \
		--initial-advertise-peer-urls "http://$ip:$pp" \
		--initial-cluster "m0=http://$ip:$pp" --log-level warn \
		</dev/null >"$MC_DIR/etcd.log" 2>&1 3>&- &
	ETCD_PID=$!
	echo "$ETCD_PID etcd" >>"$MC_DIR/pids"
	local i
	for i in $(seq 1 100); do
		curl -sf "$ETCD/health" 2>/dev/null | grep -q true && return 0
		sleep 0.1
	done
	echo "# etcd did not start:" >&2
	sed 's/^/# /' "$MC_DIR/etcd.log" >&2
	return 1
}

# ha_ports: the RPC ports of masters a, b and c, and $MASTER_ADDR, the
# list of them (or the one shared port with HA_SHARED=1).
declare -gA HA_PID HA_HTTP HA_RPC HA_IP HA_EXEC HA_ETCD
ha_ports() {
	local n shared
	shared=$(free_port)
	MASTER_ADDR=
	for n in a b c; do
		HA_RPC[$n]=$([ -n "${HA_SHARED:-}" ] && echo "$shared" || free_port)
		HA_HTTP[$n]=$(free_port)
		MASTER_ADDR+=${MASTER_ADDR:+,}${HA_IP[$n]:-127.0.0.1}:${HA_RPC[$n]}
	done
	[ -n "${HA_SHARED:-}" ] && MASTER_ADDR=127.0.0.1:$shared
	MOONCAKE_RPC=$MASTER_ADDR
	export MASTER_ADDR MOONCAKE_RPC
}

# start_ha NAME [opts]: master NAME (a, b or c) with oplog = etcd, its
# ports and state_dir; does not wait (a standby waits to lead).
# HA_PID[NAME] is its pid.
start_ha() {
	local n=$1 log=$MC_DIR/master-$1.log
	shift
	[ -n "${HA_RPC[$n]:-}" ] || ha_ports
	_mc_new_log "$log"
	local ip=${HA_IP[$n]:-127.0.0.1}
	# shellcheck disable=SC2086
	${HA_EXEC[$n]:-} "$MASTER" --oplog=etcd --etcd_endpoints="${HA_ETCD[$n]:-$ETCD}" \
		--cluster_id=t --etcd_lease_ttl_s=2 \
		--rpc_address="$ip" --rpc_port="${HA_RPC[$n]}" --http_address="$ip" \
		--http_port="${HA_HTTP[$n]}" --state_dir="$MC_DIR/master-$n" --snapshot_interval_s=0 \
		"$@" </dev/null 2>"$log" 3>&- &
	HA_PID[$n]=$!
	echo "${HA_PID[$n]} master-$n" >>"$MC_DIR/pids"
}

# wait_leader NAME [SECONDS]: NAME logs "ready" (it leads and serves).
wait_leader() {
	local i
	for i in $(seq 1 $((${2:-10} * 20))); do
		grep -q 'ready: rpc on' "$MC_DIR/master-$1.log" && return 0
		kill -0 "${HA_PID[$1]}" 2>/dev/null || break
		sleep 0.05
	done
	echo "# master $1 does not lead:" >&2
	local f
	for f in "$MC_DIR"/master-*.log; do
		echo "# $f:" >&2
		tail -n 15 "$f" | sed 's/^/# /' >&2
	done
	return 1
}

health() { curl -s "http://${HA_IP[$1]:-127.0.0.1}:${HA_HTTP[$1]}/health"; }

# failover OLD NEW: kill -9 of leader OLD, waits for NEW to serve; sets
# FAILOVER_T0 (ns, the kill) and FAILOVER_MS (to NEW serving).
failover() {
	FAILOVER_T0=$(date +%s%N)
	kill -KILL "${HA_PID[$1]}"
	_mc_reap "${HA_PID[$1]}"
	wait_leader "$2" 15
	FAILOVER_MS=$((($(date +%s%N) - FAILOVER_T0) / 1000000))
}

wait_put_ok() {
	local i
	for i in $(seq 1 200); do
		ctl object put "probe-$1-$i" "$MC_DIR/probe" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	ctl object put "probe-$1-last" "$MC_DIR/probe"
}

etcd_keys() { ETCDCTL_API=3 etcdctl --endpoints="$ETCD" get --prefix /mooncake/t/ --keys-only | grep -v '^$'; }


poll_http() {
	local ip=${HA_IP[$1]:-127.0.0.1} port=${HA_HTTP[$1]} f=$MC_DIR/poll-$1
	: >"$f"
	# a bare connect (bash's /dev/tcp) every 10 ms, a /health every 20th
	(i=0; while :; do
		if ((++i % 20)); then
			(exec 5<>"/dev/tcp/$ip/$port") 2>/dev/null
		else
			curl -s -o /dev/null --max-time 2 "http://$ip:$port/health"
		fi
		echo $? >>"$f"	# 0, or not (refused: 1 from bash, 7 from curl)
		sleep 0.01
	done) </dev/null >/dev/null 2>&1 3>&- &
	POLL_PID=$!
	echo "$POLL_PID poll-$1" >>"$MC_DIR/pids"
}
poll_stop() { kill "$POLL_PID" 2>/dev/null; wait "$POLL_PID" 2>/dev/null || true; }
