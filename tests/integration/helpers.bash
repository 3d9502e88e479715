# SPDX-License-Identifier: Apache-2.0
# tests/integration/helpers.bash -- shared helpers for the integration bats
# files (`load helpers`).  A cluster is a master and named nodes started on
# ephemeral ports; everything a test starts is recorded under $MC_DIR so that
# stop_all kills exactly those processes and deletes exactly the shm files of
# the test's own nodes (never another run's).
#
#   mc_init [DIR]            paths ($O, $MASTER, $NODE, $CTL, $RPC) and the
#                            state directory (default $BATS_TEST_TMPDIR/mc)
#   start_master [opts]      sets $MASTER_ADDR, $MASTER_PID, $MOONCAKE_RPC and
#                            $MASTER_HTTP (admin HTTP host:port), $MOONCAKE_MASTER
#   start_node NAME [opts]   waits for "ready" and "mounted"; records the pid,
#                            the endpoint and the segment (shm) ids
#   node_pid NAME, node_endpoint NAME, node_of_endpoint HOST:PORT
#   kill_node NAME [SIGNAL]  (default KILL) and reap it
#   stop_all                 SIGTERM (then SIGKILL) everything started, reap,
#                            delete the nodes' shm files; fails if a daemon
#                            log holds a sanitizer report
#   mc_stop_pid PID          SIGTERM (then SIGKILL after 10 s) one process, reap it
#   start_load, stop_load, verify_load   tests/tools/mc-load's put/remove load,
#                            its end, and the check of what it journalled
#   mc_check_sanitizer FILE...  fails, printing the file, if one holds an
#                            ASan/LSan/UBSan/TSan report (files that start
#                            their own daemons call it in their teardown)
#   ctl ARGS...              mooncakectl --rpc $MASTER_ADDR --master $MASTER_HTTP ARGS...
#   put_random KEY SIZE [put options]   random bytes in $MC_DIR/data, put
#   get_compare KEY          get to a file, cmp with what put_random wrote
#   free_port                a free TCP port below the ephemeral range (for
#                            servers without port 0, and for a daemon restarted
#                            on the port it had)
#   mc_may_use_root          true when root-only parts may run: we are root and
#                            not in a group that keeps out of them (tests/run.sh
#                            sets MC_TEST_NO_ROOT=1 for `make test` and test-slow)
#
# Network namespaces (410-netns.bats): $MC_EXEC is a command prefix for the
# daemons (e.g. "ip netns exec NS"), $MC_CTL_EXEC for mooncakectl;
# $MC_MASTER_IP and $MC_NODE_IP are the addresses to listen on (default
# 127.0.0.1).  They are read at each call, so set them per call:
#   MC_EXEC="ip netns exec ns1" MC_NODE_IP=10.231.7.11 start_node n1

mc_init() {
	cd "$BATS_TEST_DIRNAME/../.." || return 1
	O=${MC_BUILD:-$PWD/.output}
	MASTER=$O/bin/mooncake-master
	NODE=$O/bin/mooncake-node
	CTL=$O/bin/mooncakectl
	RPC=$O/tests/tools/mc-rpc
	MC_DIR=${1:-$BATS_TEST_TMPDIR/mc}
	mkdir -p "$MC_DIR/data"
	: >>"$MC_DIR/pids"	# "pid name" per line, in start order
	: >>"$MC_DIR/nodes"	# node names
	: >>"$MC_DIR/shm"	# segment ids of our nodes
	export MC_DIR
}

# _mc_wait_line FILE SED_EXPR PID: prints the first capture of SED_EXPR in
# FILE once it appears (5 s at most); fails early if PID dies.
_mc_wait_line() {
	local f=$1 expr=$2 pid=$3 i v
	for i in $(seq 1 200); do
		v=$(sed -n "s/$expr/\1/p" "$f" 2>/dev/null | tail -n1)
		if [ -n "$v" ]; then
			echo "$v"
			return 0
		fi
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.025
	done
	return 1
}

# _mc_new_log FILE: an empty FILE for a daemon about to start; what an
# earlier instance wrote there moves to FILE's .earlier.log, which the
# sanitizer check reads too.
_mc_new_log() {
	[ -s "$1" ] && cat "$1" >>"${1%.log}.earlier.log"
	: >"$1"
}

start_master() {
	local ip=${MC_MASTER_IP:-127.0.0.1} log=$MC_DIR/master.log
	_mc_new_log "$log"
	# shellcheck disable=SC2086
	$MC_EXEC "$MASTER" --rpc_address="$ip" --rpc_port=0 --http_address="$ip" --http_port=0 --state_dir="$MC_DIR/master" \
		"$@" </dev/null 2>"$log" 3>&- &
	MASTER_PID=$!
	echo "$MASTER_PID master" >>"$MC_DIR/pids"
	local hp
	if ! hp=$(_mc_wait_line "$log" '.*ready: rpc on \([^ ,]*\),.*' "$MASTER_PID"); then
		echo "# mooncake-master did not become ready:" >&2
		sed 's/^/# /' "$log" >&2
		return 1
	fi
	MASTER_ADDR=$hp
	MOONCAKE_RPC=$hp
	MASTER_HTTP=$(sed -n 's/.*ready: rpc on [^ ,]*, http on \([^ ,]*\),.*/\1/p' "$log" | tail -n1)
	MOONCAKE_MASTER=http://$MASTER_HTTP
	echo "$hp" >"$MC_DIR/master.addr"
	export MASTER_ADDR MOONCAKE_RPC MASTER_HTTP MOONCAKE_MASTER
}

# _mc_record_shm NAME: the segment ids from the node's node.id and its log.
_mc_record_shm() {
	local n=$1
	{
		[ -f "$MC_DIR/node-$n/node.id" ] &&
			awk '$1 == "segment" { print $2 }' "$MC_DIR/node-$n/node.id"
		[ -f "$MC_DIR/node-$n.log" ] &&
			grep -o '/dev/shm/mooncake-[0-9a-f]*' "$MC_DIR/node-$n.log" | sed 's|.*/mooncake-||'
	} 2>/dev/null | grep -E '^[0-9a-f]+$' >>"$MC_DIR/shm"
	sort -u -o "$MC_DIR/shm" "$MC_DIR/shm"
}

# start_node NAME [options]: segment_size defaults to 16M (an option given
# later on the command line wins).
start_node() {
	local n=$1
	shift
	local ip=${MC_NODE_IP:-127.0.0.1} log=$MC_DIR/node-$n.log pid
	_mc_new_log "$log"
	grep -qx "$n" "$MC_DIR/nodes" || echo "$n" >>"$MC_DIR/nodes"
	# shellcheck disable=SC2086
	$MC_EXEC "$NODE" --master="${MASTER_ADDR:?start_master first}" --name="$n" \
		--data_address="$ip" --data_port=0 --http_address="$ip" --http_port=0 --segment_size=16M \
		--state_dir="$MC_DIR/node-$n" "$@" </dev/null 2>"$log" 3>&- &
	pid=$!
	echo "$pid node-$n" >>"$MC_DIR/pids"
	echo "$pid" >"$MC_DIR/node-$n.pid"
	local ep ok=
	if ep=$(_mc_wait_line "$log" '.*ready: data on [^ ,]*, endpoint \([^ ,]*\),.*' "$pid"); then
		local i
		for i in $(seq 1 400); do
			grep -q 'mounted' "$log" && { ok=1; break; }
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.025
		done
	fi
	_mc_record_shm "$n"
	if [ -z "$ok" ]; then
		echo "# mooncake-node $n did not become ready ($(date +%T.%N)):" >&2
		sed 's/^/# /' "$log" >&2
		echo "# the master's log:" >&2
		sed 's/^/# /' "$MC_DIR/master.log" >&2
		return 1
	fi
	echo "$ep" >"$MC_DIR/node-$n.endpoint"
}

node_pid() { cat "$MC_DIR/node-$1.pid"; }
node_endpoint() { cat "$MC_DIR/node-$1.endpoint"; }

# node_of_endpoint HOST:PORT: the name of the node advertising it.
node_of_endpoint() {
	local n
	while read -r n; do
		[ "$(cat "$MC_DIR/node-$n.endpoint" 2>/dev/null)" = "$1" ] && { echo "$n"; return 0; }
	done <"$MC_DIR/nodes"
	return 1
}

# _mc_reap PID: wait (up to 10 s: a sanitized daemon checks for leaks as it
# exits) until PID is gone or a zombie, then reap it if it is our child.
# Returns 1 if it is still running.
_mc_reap() {
	local pid=$1 i st
	for i in $(seq 1 400); do
		kill -0 "$pid" 2>/dev/null || break
		# (gone between the two reads: awk fails, which errexit must not see)
		st=$(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null || true)
		[ "$st" = Z ] && break
		sleep 0.025
	done
	if kill -0 "$pid" 2>/dev/null && [ "$(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null)" != Z ]; then
		return 1
	fi
	wait "$pid" 2>/dev/null || true
	return 0
}

# _mc_linger PID: what a process that outlived SIGKILL is waiting for (its
# threads' states and kernel wait channels; their stacks when root).
_mc_linger() {
	local t
	[ -d "/proc/$1" ] || return 0
	echo "# process $1 still exists $(date +%T.%N) after SIGKILL:" >&2
	for t in /proc/"$1"/task/*; do
		echo "#   thread ${t##*/}: $(awk '{ print $3 }' "$t/stat" 2>/dev/null) $(cat "$t/wchan" 2>/dev/null)" >&2
		sed 's/^/#     /' "$t/stack" 2>/dev/null >&2 || true
	done
}

# kill_node NAME [SIGNAL]: a process the kernel has been told to kill dies,
# but on a loaded machine tearing down its memory can take a while: after
# 10 s it is reported (_mc_linger) and given 50 s more.
kill_node() {
	local n=$1 sig=${2:-KILL} pid i
	pid=$(node_pid "$n")
	kill -"$sig" "$pid"
	_mc_reap "$pid" && return 0
	kill -KILL "$pid" 2>/dev/null || true	# (it may have died meanwhile)
	_mc_linger "$pid"
	for i in 1 2 3 4 5; do
		_mc_reap "$pid" && return 0
	done
	_mc_linger "$pid"
	return 1
}

mc_stop_pid() {
	kill -TERM "$1" 2>/dev/null || true
	_mc_stopped "$@"
}

# _mc_stopped PID [NAME]: reaps PID, sent SIGTERM already; SIGKILL if it lingers.
_mc_stopped() {
	if ! _mc_reap "$1"; then
		echo "# ${2:-process} ($1) ignored SIGTERM; SIGKILL" >&2
		kill -KILL "$1" 2>/dev/null
		_mc_reap "$1"
	fi
}

mc_check_sanitizer() {
	local f rc=0
	for f in "$@"; do
		[ -f "$f" ] || continue
		if grep -Eq 'ERROR: [A-Za-z]+Sanitizer|WARNING: ThreadSanitizer|runtime error:' "$f"; then
			echo "# sanitizer report in $f:" >&2
			sed 's/^/# /' "$f" >&2
			rc=1
		fi
	done
	return $rc
}

# start_load, stop_load, verify_load: tests/tools/mc-load putting and removing
# from 4 threads into $MC_DIR/load (its journal of acknowledged operations)
# until stop_load; verify_load checks every journalled operation against the
# cluster (on failure, also the segments: a full one evicts acknowledged
# objects).  The load is in $MC_DIR/pids (stop_all ends it if a test fails
# first) and does not hold bats' fd 3 (bats would wait for it to exit).
start_load() {
	mkdir -p "$MC_DIR/load"
	"$O/tests/tools/mc-load" run "$MASTER_ADDR" "$MC_DIR/load" 1800 4 3>&- &
	LOAD_PID=$!
	echo "$LOAD_PID mc-load" >>"$MC_DIR/pids"
}
stop_load() {
	kill -TERM "$LOAD_PID"
	wait "$LOAD_PID"
}
verify_load() {
	run "$O/tests/tools/mc-load" verify "$MASTER_ADDR" "$MC_DIR/load"
	grep '^mc-load verify:' <<<"$output" | sed 's/^/# /' >&3
	[ "$status" -eq 0 ] && return 0
	echo "$output" | tail -n 20
	local f
	for f in "$MC_DIR"/master*.log; do
		echo "# $f:"
		tail -n 40 "$f" | sed 's/^/#   /'
	done
	ctl segment list || true
	false
}

# _mc_log_tails: a log's warnings and worse (syslog levels 0-4), then its
# last lines, for each daemon.
_mc_log_tails() {
	local f
	for f in "$MC_DIR"/*.log; do
		[ -s "$f" ] || continue
		echo "---- ${f##*/}: its last 20 warnings, then its last 30 lines"
		grep '^<[0-4]>' "$f" | tail -n 20
		echo "----"
		tail -n 30 "$f"
	done
}

# stop_all: nodes first (newest first), then the master.
stop_all() {
	[ -n "${MC_DIR:-}" ] && [ -f "$MC_DIR/pids" ] || return 0
	local pid name rc=0
	while read -r pid name; do
		kill -TERM "$pid" 2>/dev/null || true
	done < <(tac "$MC_DIR/pids")
	while read -r pid name; do
		_mc_stopped "$pid" "$name"
	done < <(tac "$MC_DIR/pids")
	: >"$MC_DIR/pids"
	# The teardown of a failed test shows the end of every daemon's log
	# (bats prints a teardown's output only then).
	[ -z "${BATS_TEARDOWN_STARTED:-}" ] || [ -n "${BATS_TEST_COMPLETED:-}" ] || _mc_log_tails
	local n
	while read -r n; do _mc_record_shm "$n"; done <"$MC_DIR/nodes"
	local id
	while read -r id; do
		[ -n "$id" ] && rm -f "/dev/shm/mooncake-$id"
	done <"$MC_DIR/shm"
	# Sanitizer builds: a report in a daemon's log fails the test.
	mc_check_sanitizer "$MC_DIR"/*.log || rc=1
	return $rc
}

# free_port: a TCP port nothing listens on now, for servers that take no
# port 0 (Prometheus), and for a daemon that must come back on the same port
# after a kill: the port is below the kernel's ephemeral range, so no
# connect() or bind(0) anywhere on the host can take it while the daemon is
# down (a port 0 pick is in that range: any outgoing connection may get it).
free_port() {
	local p i lo hi
	read -r lo hi </proc/sys/net/ipv4/ip_local_port_range
	hi=$((lo > 11024 ? lo : 60000)) lo=$((lo > 11024 ? 10000 : 20000))
	for i in $(seq 1 50); do
		p=$((lo + RANDOM % (hi - lo)))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return 0; }
	done
	return 1
}

# mc_netns_del FILE: deletes the network namespaces named in FILE (one a
# line), newest first, after killing anything still running in them, and
# a root-namespace link of the same name if there is one (a veth pair's end).
mc_netns_del() {
	[ -f "$1" ] || return 0
	local ns pid
	while read -r ns; do
		for pid in $(ip netns pids "$ns" 2>/dev/null); do
			kill -KILL "$pid" 2>/dev/null || true
		done
		ip link del "$ns" 2>/dev/null || true
		ip netns del "$ns" 2>/dev/null || true
	done < <(tac "$1")
}

mc_may_use_root() {
	[ "$(id -u)" -eq 0 ] && [ -z "${MC_TEST_NO_ROOT:-}" ]
}

ctl() {
	# shellcheck disable=SC2086
	$MC_CTL_EXEC "$CTL" --rpc "$MASTER_ADDR" ${MASTER_HTTP:+--master "http://$MASTER_HTTP"} "$@"
}

_mc_file() { printf '%s/data/%s' "$MC_DIR" "$(printf '%s' "$1" | tr -c 'A-Za-z0-9._-' '_')"; }

# put_random KEY SIZE [put options]: SIZE random bytes (K/M suffixes allowed,
# as head -c takes them), kept in $MC_DIR/data for get_compare.
put_random() {
	local key=$1 size=$2 f
	shift 2
	f=$(_mc_file "$key")
	head -c "$size" /dev/urandom >"$f"
	ctl object put "$key" "$f" "$@"
}

# get_compare KEY: reads KEY back and compares it byte for byte.
get_compare() {
	local key=$1 f out
	f=$(_mc_file "$key")
	out=$f.out.$$.$RANDOM
	ctl object get "$key" "$out" || return
	cmp "$f" "$out" || return
	rm -f "$out"
}

# restart_master [opts]: kill -9 the master and start it again on the same
# port (the first start_master of these tests takes a free_port, which no
# outgoing connection can take meanwhile).
restart_master() {
	local port=${MASTER_ADDR##*:}
	kill -KILL "$MASTER_PID"
	# (a master inside a long fsync dies when it returns)
	_mc_reap "$MASTER_PID" || _mc_reap "$MASTER_PID" || _mc_reap "$MASTER_PID"
	start_master --rpc_port="$port" "$@"
}

# wait_readable KEY: the node remounts within a few seconds of the restart.
wait_readable() {
	local i
	for i in $(seq 1 100); do
		get_compare "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	get_compare "$1" || { sed "s|^|# |" "$MC_DIR"/*.log >&2; return 1; }
}

# ---- the write fence (710-put-start-crash, 757-etcd-fence) ----

# rep_of LINE N: the N-th (1-based) "rep=" field of an mc-rpc line
# (ENDPOINT,SEGMENT,OFFSET,LENGTH,GRANT).
rep_of() { tr ' ' '\n' <<<"$1" | sed -n 's/^rep=//p' | sed -n "${2}p"; }

# late_write_fenced MASTER REP: REP is the rep= field of a put MASTER no
# longer knows (lost with the master before it), whose node n1 has since
# remounted.  Its PutEnd answers OBJECT_NOT_FOUND; a new 4 KiB put through
# MASTER writes 0x4e; the late write under REP's grant, plain and
# node-ended, is refused GRANT_DENIED and counted on n1 as "fenced"; the
# new object still reads 0x4e.
late_write_fenced() {
	local m=$1 ep seg off len grant ep2 seg2 off2 len2 grant2 before
	IFS=, read -r ep seg off len grant <<<"$2"
	run -0 "$RPC" "$m" put_end lost 99
	[[ "$output" == OBJECT_NOT_FOUND* ]]
	run -0 "$RPC" "$m" put_start new 4096 98
	[[ "$output" == OK* ]]
	IFS=, read -r ep2 seg2 off2 len2 grant2 <<<"$(rep_of "$output" 1)"
	run -0 "$RPC" "$ep2" write "$seg2" "$off2" "$len2" "$grant2" 0x4e
	[ "$output" = OK ]
	run -0 "$RPC" "$m" put_end new 98
	[[ "$output" == OK* ]]
	before=$(node_metric n1 'mooncake_node_grant_refusals_total{reason="fenced"}')
	run -0 "$RPC" "$ep" write "$seg" "$off" "$len" "$grant" 0x41
	[ "$output" = GRANT_DENIED ]
	run -0 "$RPC" "$ep" write_end "$seg" "$off" "$len" "$grant" 99 lost 0x41
	[ "$output" = GRANT_DENIED ]
	[ "$(node_metric n1 'mooncake_node_grant_refusals_total{reason="fenced"}')" -ge \
		$((${before:-0} + 2)) ]
	[ "$(node_metric n1 mooncake_node_write_fences_total)" -ge 1 ]
	[ "$(node_metric n1 mooncake_node_write_fence_timeouts_total)" = 0 ]
	run -0 "$RPC" "$m" where new
	IFS=, read -r ep seg off len grant <<<"$(rep_of "$output" 1)"
	[ "$seg" = "$seg2" ] && [ "$off" = "$off2" ]
	run -0 "$RPC" "$ep" read "$seg" "$off" "$len" "$grant"
	[[ "$output" == "OK bytes=4096 hex=4e4e4e4e"* ]]
}

# ---- nodes with a disk tier (250-node-disk, 260-local-disk, 265-disk-report) ----

# node_http NAME: the node's HTTP address, from its log.
node_http() { sed -n 's/.*ready: data on .*, http on \([^ ,]*\),.*/\1/p' "$MC_DIR/node-$1.log" | tail -n1; }
# node_metric NAME METRIC / master_metric METRIC: a metric's value.
node_metric() { curl -sf "http://$(node_http "$1")/metrics" | awk -v n="$2" '$1 == n { print $2 }'; }
master_metric() { curl -sf "http://$MASTER_HTTP/metrics" | awk -v n="$1" '$1 == n { print $2 }'; }
# tier_of KEY: its replicas' types ("memory", "local_disk", ...), comma-separated.
tier_of() { ctl --json object stat "$1" | jq -r '[.replicas[].type] | join(",")'; }

# wait_node_metric NAME METRIC N: until the node's counter reaches N (30 s at most).
wait_node_metric() {
	local i v
	for i in $(seq 1 300); do
		v=$(node_metric "$1" "$2")
		[ "${v:-0}" -ge "$3" ] && return 0
		sleep 0.1
	done
	echo "# $2: ${v:-none}, wanted $3" >&2
	return 1
}
