# SPDX-License-Identifier: Apache-2.0
# tests/packaging/in-root.sh -- sourced by the scripts packages.bats runs in
# the Debian root (POSIX sh, set -e): start the installed daemons as the
# user mooncake with their installed config, stop them, check the tracer.
# The daemons are started by setpriv directly (not through a function) so
# that $! is the daemon itself.

# wait_for FILE TEXT PID: until FILE holds TEXT (20 s at most); fails,
# showing FILE, if PID exits first
wait_for() {
	n=0
	while ! grep -q "$2" "$1" 2>/dev/null; do
		if ! kill -0 "$3" 2>/dev/null; then
			echo "exited before '$2':"; cat "$1"; return 1
		fi
		n=$((n + 1))
		if [ "$n" -ge 400 ]; then
			echo "no '$2' in 20 s:"; cat "$1"; return 1
		fi
		sleep 0.05
	done
}

AS_MOONCAKE="setpriv --reuid=mooncake --regid=mooncake --init-groups"

# start_master: sets MASTER
start_master() {
	$AS_MOONCAKE /usr/bin/mooncake-master </dev/null >/tmp/master.log 2>&1 &
	MASTER=$!
	wait_for /tmp/master.log 'ready: rpc on' "$MASTER"
}

# start_node: sets NODE.  64 MiB segments instead of the installed 1 GiB
# (a flag: the config file is read all the same).
start_node() {
	$AS_MOONCAKE /usr/bin/mooncake-node --segment_size=64M </dev/null >/tmp/node.log 2>&1 &
	NODE=$!
	wait_for /tmp/node.log 'mounted' "$NODE"
}

# stop PID: SIGTERM, and the daemon's exit status (0 expected)
stop() {
	kill -TERM "$1"
	wait "$1"
}

# trace_check: the installed tracer attaches to the installed master and to
# libmooncake, found where the dynamic loader finds it; unpins on exit
trace_check() {
	pin=/sys/fs/bpf/mcpkg-$$
	if ! why=$(/usr/bin/mooncake-trace --pin_path="$pin" --check=true); then
		echo "tracer not checked: BPF unavailable here ($why)"
		return 0
	fi
	/usr/bin/mooncake-trace --pin_path="$pin" --scan_under=/usr/ </dev/null >/tmp/trace.log 2>&1 &
	tracer=$!
	wait_for /tmp/trace.log 'ready: http on' "$tracer"
	grep 'attached .* in /usr/bin/mooncake-master' /tmp/trace.log
	grep 'attached .* in /usr/lib/[^ ]*/libmooncake\.so\.0' /tmp/trace.log
	stop "$tracer"
	test -z "$(ls "$pin" 2>/dev/null)"
}
