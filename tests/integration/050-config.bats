#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# The daemons' option tables (daemon/common/config.h): ranges checked from
# the table, with messages that name the option, its range and its unit;
# --print-config, the complete INI file the packages install, which --help
# and the daemon itself must agree with.
bats_require_minimum_version 1.5.0

load helpers

setup() {
	mc_init
	TRACE=$O/bin/mooncake-trace
}

teardown() {
	stop_all
}

# opts_of BINARY: the option names --help lists (--config, --help and
# --version are not keys of the file).
opts_of() {
	"$1" --help | sed -n 's/^  --\([a-z_]*\)=.*/\1/p' | grep -vx config
}

@test "an out-of-range value exits 2 naming the option, its range and its unit" {
	check() { # check BINARY FLAG EXPECTED...
		local bin=$1 flag=$2
		shift 2
		run -2 "$bin" "$flag"
		local name=${flag%%=*}
		[[ "$output" == *"'$name'"* ]] || { echo "not named: $name in $output"; return 1; }
		for e in "$@"; do
			[[ "$output" == *"$e"* ]] || { echo "missing '$e' in $output"; return 1; }
		done
	}
	check "$MASTER" --workers=0 "bad value '0'" "expected 1..256 threads"
	check "$MASTER" --workers=257 "bad value '257'" "expected 1..256 threads"
	check "$MASTER" --client_ttl_ms=999 "expected at least 1000 ms"
	check "$MASTER" --snapshot_retain=1001 "expected 1..1000 snapshots"
	check "$MASTER" --eviction_high_watermark=1.5 "expected more than 0, at most 1"
	check "$MASTER" --eviction_high_watermark=0 "expected more than 0, at most 1"
	check "$NODE" --segments=1025 "expected 1..1024 segments"
	check "$NODE" --segment_size=6K "bad value '6K'" "expected 4K..1T bytes, a multiple of 4K"
	check "$NODE" --segment_size=2T "bad value '2T'" "expected 4K..1T bytes"
	check "$NODE" --workers=0 "expected 1..256 threads"
	check "$NODE" --name="$(printf 'n%.0s' $(seq 1 101))" "expected at most 100 bytes"
	if [ -x "$TRACE" ]; then
		check "$TRACE" --scan_interval_ms=9 "expected 10..3600000 ms"
		check "$TRACE" --pin_path=relative "expected an absolute path"
	fi
	# the bounds hold: the limits themselves are accepted
	run -0 "$MASTER" --config=/dev/null --workers=256 --client_ttl_ms=1s \
		--eviction_high_watermark=1 --print-config
	run -0 "$NODE" --config=/dev/null --segment_size=1T --segments=1024 --print-config
	# the same check for a value from the file, which a flag may still correct
	printf '[master]\nsnapshot_retain = 0\n' >"$MC_DIR/m.conf"
	run -2 "$MASTER" --config="$MC_DIR/m.conf"
	[[ "$output" == *"'--snapshot_retain' (expected 1..1000 snapshots)"* ]]
	run -0 "$MASTER" --config="$MC_DIR/m.conf" --snapshot_retain=2 --print-config
	[[ "$output" == *$'\nsnapshot_retain = 2\n'* ]]
}

@test "--print-config: every option of --help, with its help, range and default, commented out" {
	for bin in "$MASTER" "$NODE" "$TRACE"; do
		[ -x "$bin" ] || continue
		run -0 "$bin" --config=/dev/null --print-config
		conf=$output
		n=0
		for o in $(opts_of "$bin"); do
			# the default line, as --help shows the default
			def=$("$bin" --help | sed -n "s/^  --$o=.*(default: \(.*\))\$/\1/p")
			[ "$def" = '""' ] && def=
			grep -qxF "#$o = $def" <<<"$conf" || { echo "$bin: no '#$o = $def'"; false; }
			n=$((n + 1))
		done
		[ "$n" -ge 10 ]
		# every key is commented out, every line fits inih's 199 characters
		! grep -v '^#' <<<"$conf" | grep -q '='
		! grep -q '.\{200\}' <<<"$conf"
	done
	# the help text (wrapped), then the range or the choices
	text() { "$1" --config=/dev/null --print-config | sed -n 's/^# //p' | tr '\n' ' '; }
	run -0 text "$MASTER"
	[[ "$output" == *"RPC worker threads. Range: 1..256 threads. "* ]]
	[[ "$output" == *"the least severe messages logged. One of: error, warning, notice, info or debug. "* ]]
	[[ "$output" == *"unmounted. Range: at least 1000 ms. "* ]]
	run -0 text "$NODE"
	[[ "$output" == *"bytes per segment (K/M/G/T suffixes). Range: 4K..1T bytes, a multiple of 4K. "* ]]
	"$NODE" --config=/dev/null --print-config | grep -qx '#segment_size = 1G'
}

@test "--print-config loaded back with --config gives the same config, and the daemon runs on it" {
	f=$MC_DIR/master.conf
	"$MASTER" --config=/dev/null --workers=3 --lease_ttl_ms=5s --eviction_high_watermark=0.95 \
		--oplog_sync=false --log_level=notice --admin_token_file= --print-config >"$f"
	# what differs from the defaults is set, with the default beside it
	[ "$(grep -v '^#' "$f" | grep -c =)" -eq 5 ]
	grep -qx 'workers = 3' "$f"
	grep -qx 'lease_ttl_ms = 5000' "$f"
	grep -qx 'eviction_high_watermark = 0.95' "$f"
	grep -qx 'oplog_sync = false' "$f"
	grep -B1 -x 'workers = 3' "$f" | grep -qx '# default: 2'
	# read back: the same file again
	run -0 "$MASTER" --config="$f" --print-config
	diff <(echo "$output") "$f"
	# and the master runs with it (flags still win)
	start_master --config="$f"
	grep -q ', 3 workers,' "$MC_DIR/master.log"
	run -0 "$RPC" "$MASTER_ADDR" hello
	for bin in "$NODE" "$TRACE"; do
		[ -x "$bin" ] || continue
		case $bin in
		"$NODE") flags=(--segments=4 --segment_size=64M --name=n1 --workers=1) ;;
		*) flags=(--probes=all --keep_pins --scan_interval_ms=2s --slow_transfer_us=5) ;;
		esac
		"$bin" --config=/dev/null "${flags[@]}" --print-config >"$f"
		[ "$(grep -v '^#' "$f" | grep -c =)" -eq 4 ]
		run -0 "$bin" --config="$f" --print-config
		diff <(echo "$output") "$f"
	done
}

@test "the default config file is SYSCONFDIR/mooncake/<daemon>.conf" {
	for d in master node trace; do
		[ -x "$O/bin/mooncake-$d" ] || continue
		run -0 "$O/bin/mooncake-$d" --help
		[[ "$output" == *"config file (default $(cat "$O/.sysconfdir")/mooncake/$d.conf)"* ]]
	done
}
