#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# mooncakectl without the REST admin API: --help (of every command and
# verb), --version, usage errors (exit 2,
# detected before contacting anything), an unreachable master (exit 1, the
# message names the URL), version (with and without a master), the trace
# placeholder, progress on a terminal only, the bash completion (loads,
# completes groups, verbs, options, files) and the man page (renders without
# warnings, documents every group).  The REST commands against a real master
# are in 610-ctl-rest.bats.
bats_require_minimum_version 1.5.0

load helpers

setup() {
	mc_init
	# A closed port: nothing listens on port 1 of loopback.
	DEAD=http://127.0.0.1:1
	unset MOONCAKE_MASTER MOONCAKE_RPC MOONCAKE_TOKEN_FILE
}

teardown() {
	stop_all
}

@test "--help and help list every group and the global options; no arguments is a usage error" {
	run -0 "$CTL" --help
	for g in status segment client object tenant evict snapshot trace version; do
		[[ "$output" == *"  $g"* ]] || { echo "missing $g"; false; }
	done
	for o in --master --rpc --tenant --token-file --timeout --rdma-device --rdma-qps \
		--rdma-lanes "-o table|json"; do
		[[ "$output" == *"$o"* ]] || { echo "missing $o"; false; }
	done
	[[ "$output" == *"Exit status: 0 ok, 1 failed operation, 2 usage error, 3 object exists (put),"* ]]
	# the RDMA options' ranges (libmooncake's): usage errors before any connection
	run -2 --separate-stderr "$CTL" --rdma-lanes 9 object get k f
	[[ "$stderr" == *"bad value '9' for --rdma-lanes (1..8)"* ]]
	run -2 --separate-stderr "$CTL" --rdma-qps 0 object get k f
	[[ "$stderr" == *"bad value '0' for --rdma-qps (1..16)"* ]]
	run -2 --separate-stderr "$CTL" --rdma-device "" object get k f
	[[ "$stderr" == *"--rdma-device needs"* ]]
	run -0 "$CTL" help
	[[ "$output" == *"segment list | show SEGMENT | drain SEGMENT [--grace MS] | unmount SEGMENT"* ]]
	run -2 --separate-stderr "$CTL"
	[ -z "$output" ]
	[[ "$stderr" == usage:* ]]
}

@test "object --help, object put --help, segment -h and every other command and verb: exit 0, its usage; --version exits 0" {
	# --master and --rpc point at closed ports: contacting them would be exit 1.
	c() { "$CTL" --master "$DEAD" --rpc 127.0.0.1:1 "$@"; }
	run -0 --separate-stderr c object --help
	[ -z "$stderr" ]
	[[ "${lines[0]}" == usage:* ]]
	for v in put get stat exist prefix rm ls pin unpin; do
		[[ "$output" == *"mooncakectl object $v"* ]] || { echo "object --help lacks $v"; false; }
	done
	run -0 --separate-stderr c object put --help
	[ -z "$stderr" ]
	[ "${lines[0]}" = "usage: mooncakectl [OPTIONS] object put KEY FILE|- [--replicas N] [--disk-replicas 0|1] [--dfs-replicas 0|1] [--write-through] [--pin-ttl MS] [--hard-pin] [--group G] [--overwrite]" ]
	[[ "$output" == *"--replicas N"*"--pin-ttl MS"*"--hard-pin"*"--group G"*"--overwrite"* ]]
	[[ "$output" == *"exit 3"* ]]
	run -0 c segment -h
	[[ "$output" == *"mooncakectl segment drain SEGMENT [--grace MS]"* ]]
	# Every group and every verb, with -h and --help, anywhere after it.
	local g v
	for g in "status" "segment list" "segment show" "segment drain" "segment unmount" \
		"client list" "object get" "object stat" "object exist" "object prefix" "object rm" "object ls" \
		"object pin" "object unpin" "tenant list" "tenant quota" "evict" "snapshot list" \
		"snapshot create" "metadata get" "metadata put" "metadata rm" "trace lease" \
		"trace evict" "trace transfer" "node release" "version" "help"; do
		for h in -h --help; do
			# shellcheck disable=SC2086
			run -0 --separate-stderr c $g $h
			[ -z "$stderr" ] || { echo "$g $h: $stderr"; false; }
			[[ "${lines[0]}" == "usage: mooncakectl [OPTIONS] $g" ||
				"${lines[0]}" == "usage: mooncakectl [OPTIONS] $g "* ]] ||
				{ echo "$g $h: ${lines[0]}"; false; }
		done
	done
	for g in segment client object tenant snapshot metadata trace node; do
		run -0 c "$g" --help
		[[ "${lines[0]}" == usage:* ]] || { echo "$g --help: ${lines[0]}"; false; }
	done
	# --help after arguments, and help COMMAND VERB, say the same.
	run -0 c object rm some-key --help
	[ "${lines[0]}" = "usage: mooncakectl [OPTIONS] object rm KEY [--force]" ]
	run -0 c help object rm
	[ "${lines[0]}" = "usage: mooncakectl [OPTIONS] object rm KEY [--force]" ]
	run -2 c help frob
	[[ "$output" == *"help: unknown command 'frob'"* ]]
	# --version anywhere: the client's versions, no master asked.
	run -0 --separate-stderr c --version
	[ "$output" = "mooncakectl 0.1.0 (libmooncake 0.1.0)" ]
	[ -z "$stderr" ]
	run -0 c object ls --version
	[ "$output" = "mooncakectl 0.1.0 (libmooncake 0.1.0)" ]
}

@test "usage errors exit 2 with a message and never contact the master" {
	# --master points at a closed port: contacting it would be exit 1.
	c() { "$CTL" --master "$DEAD" --rpc 127.0.0.1:1 "$@"; }
	run -2 c frobnicate
	[[ "$output" == "mooncakectl: unknown command 'frobnicate' (see mooncakectl --help)" ]]
	run -2 c segment
	[[ "$output" == *"mooncakectl segment drain SEGMENT [--grace MS]"* ]]
	run -2 c segment frob
	[[ "$output" == *"segment: unknown verb 'frob'"* ]]
	run -2 c segment show
	[[ "$output" == *"segment show: missing SEGMENT"* ]]
	run -2 c segment show a b
	[[ "$output" == *"segment show: unexpected argument 'b'"* ]]
	run -2 c segment drain x --grace soon
	[[ "$output" == *"segment drain: bad value 'soon' for --grace"* ]]
	run -2 c segment drain x --grace -5
	[[ "$output" == *"bad value '-5' for --grace"* ]]
	run -2 c segment unmount
	[[ "$output" == *"segment unmount: missing SEGMENT"* ]]
	run -2 c segment list --all
	[[ "$output" == *"segment list: unknown option '--all'"* ]]
	run -2 c status extra
	[[ "$output" == *"status: unexpected argument 'extra'"* ]]
	run -2 c client
	[[ "$output" == *"mooncakectl client list"* ]]
	run -2 c tenant quota
	[[ "$output" == *"tenant quota: missing TENANT"* ]]
	run -2 c tenant quota t 12X
	[[ "$output" == *"tenant quota: bad BYTES '12X'"* ]]
	run -2 c tenant quota t 1.5G
	[[ "$output" == *"bad BYTES '1.5G'"* ]]
	run -2 c tenant quota t 1G extra
	[[ "$output" == *"unexpected argument 'extra'"* ]]
	run -2 c evict --ratio 1.5
	[[ "$output" == *"evict: bad value '1.5' for --ratio"* ]]
	run -2 c evict --ratio half
	[[ "$output" == *"bad value 'half' for --ratio"* ]]
	run -2 c snapshot
	[[ "$output" == *"mooncakectl snapshot create"* ]]
	run -2 c snapshot create now
	[[ "$output" == *"snapshot create: unexpected argument 'now'"* ]]
	run -2 c -o yaml status
	[[ "$output" == *"bad output format 'yaml'"* ]]
	run -2 c --timeout 0 status
	[[ "$output" == *"bad value '0' for --timeout"* ]]
	run -2 c --master
	[[ "$output" == *"option '--master' needs a value"* ]]
	run -2 c --bogus status
	[[ "$output" == *"unknown option '--bogus'"* ]]
	run -2 c status --bogus
	[[ "$output" == *"status: unknown option '--bogus'"* ]]
	run -2 c segment --bogus list
	[[ "$output" == *"segment: unknown option '--bogus'"* ]]
	run -2 c status -o
	[[ "$output" == *"status: option '-o' needs a value"* ]]
	run -2 c status -o yaml
	[[ "$output" == *"bad output format 'yaml'"* ]]
	run -2 c --json=yes status
	[[ "$output" == *"option '--json' takes no value"* ]]
	run -2 c trace lease --duration soon
	[[ "$output" == *"trace: bad duration 'soon'"* ]]
	run -2 c trace lease extra
	[[ "$output" == *"trace lease: unexpected argument 'extra'"* ]]
	run -2 c object pin k
	[[ "$output" == *"object pin: --ttl MS is required"* ]]
	run -2 c object put k
	[[ "$output" == *"object put: missing argument"* ]]
	run -2 c object put k f --replicas 0
	[[ "$output" == *"--replicas must be"* ]]
	run -2 c version now
	[[ "$output" == *"version: unexpected argument 'now'"* ]]
}

@test "an unreachable master: exit 1, the message names the URL and what to check" {
	for cmd in status "segment list" "segment show 0123" "segment drain 0123" \
		"segment unmount 0123" "client list" "tenant list" "tenant quota t" \
		"tenant quota t 1G" evict "snapshot list" "snapshot create"; do
		# shellcheck disable=SC2086
		run -1 --separate-stderr "$CTL" --master "$DEAD" $cmd
		[ -z "$output" ]
		[[ "$stderr" == "mooncakectl: master $DEAD: "*"check that mooncake-master is running and --master / MOONCAKE_MASTER"* ]] ||
			{ echo "$cmd: $stderr"; false; }
	done
	# MOONCAKE_MASTER is the default of --master; a bare host:port gets http://.
	MOONCAKE_MASTER=127.0.0.1:1 run -1 "$CTL" -o json status
	[[ "$output" == "mooncakectl: master http://127.0.0.1:1: "* ]]
	run -1 "$CTL" --master 127.0.0.1:1/ status
	[[ "$output" == "mooncakectl: master http://127.0.0.1:1: "* ]]
	# The binary RPC says the same kind of thing for object commands.
	run -1 "$CTL" --rpc 127.0.0.1:1 object stat k
	[[ "$output" == *"master 127.0.0.1:1: RPC_FAIL"*"--rpc / MOONCAKE_RPC"* ]]
}

@test "--token-file: an unreadable file fails naming it; MOONCAKE_TOKEN_FILE too" {
	run -1 "$CTL" --master "$DEAD" --token-file /nonexistent/token evict
	[[ "$output" == "mooncakectl: token file /nonexistent/token: No such file or directory" ]]
	: >"$BATS_TEST_TMPDIR/empty"
	MOONCAKE_TOKEN_FILE=$BATS_TEST_TMPDIR/empty run -1 "$CTL" --master "$DEAD" evict
	[[ "$output" == "mooncakectl: token file $BATS_TEST_TMPDIR/empty: empty" ]]
	# A good file: the failure is then the unreachable master.
	printf 'secret\n' >"$BATS_TEST_TMPDIR/tok"
	run -1 "$CTL" --master "$DEAD" --token-file "$BATS_TEST_TMPDIR/tok" evict
	[[ "$output" == "mooncakectl: master $DEAD: "* ]]
}

@test "version: the client's always; the master's from /health when it answers" {
	run -0 "$CTL" --master "$DEAD" version
	[ "${lines[0]}" = "mooncakectl 0.1.0 (libmooncake 0.1.0)" ]
	[[ "${lines[1]}" == "master at $DEAD: unreachable ("* ]]
	run -0 "$CTL" --master "$DEAD" -j version
	[ "$(jq -r .version <<<"$output")" = 0.1.0 ]
	[ "$(jq -r .library <<<"$output")" = 0.1.0 ]
	[ "$(jq -r .master_url <<<"$output")" = "$DEAD" ]
	[ "$(jq -c .master <<<"$output")" = null ]
	# The default URL.
	run -0 "$CTL" -j version
	[ "$(jq -r .master_url <<<"$output")" = http://127.0.0.1:9003 ]

	start_master
	[ -n "$MASTER_HTTP" ]
	run -0 ctl version
	[ "${lines[1]}" = "master 0.1.0 at http://$MASTER_HTTP" ]
	run -0 ctl -o json version
	[ "$(jq -r .master.version <<<"$output")" = 0.1.0 ]
	[ "$(jq -r .master.status <<<"$output")" = ok ]
}

@test "trace needs the BPF tracer (exit 1) until cli/ctl-trace.c exists" {
	[ ! -f cli/ctl-trace.c ] || skip "the tracer is built"
	run -1 "$CTL" trace lease
	[ "$output" = "mooncakectl: trace: needs the BPF tracer (not built yet)" ]
}

@test "progress: bytes, rate and ETA on a terminal, also while the object travels; never when piped or with -o json" {
	start_master
	start_node p1
	head -c 3M /dev/urandom >"$MC_DIR/data/big"
	# stderr not a terminal: nothing on it.
	run -0 --separate-stderr ctl object put big "$MC_DIR/data/big"
	[ "$output" = "stored 'big' (3145728 bytes)" ]
	[ -z "$stderr" ]
	run -0 --separate-stderr ctl object get big "$MC_DIR/data/big.out"
	[ -z "$stderr" ]
	cmp "$MC_DIR/data/big" "$MC_DIR/data/big.out"
	# On a pseudo-terminal (script(1)): the file read, then the replica
	# written, each line ending at 100% with its rate and time.
	local cmd="$CTL --rpc $MASTER_ADDR" rate='[0-9.]+ (B|KiB|MiB|GiB)/s'
	run -0 script -qec "$cmd object put big2 $MC_DIR/data/big" /dev/null
	[[ "$output" =~ big\ \ \[#+\]\ 100%\ \ 3\.0\ MiB\ /\ 3\.0\ MiB\ \ ($rate|--/s)\ \ in\  ]]
	[[ "$output" =~ storing\ \'big2\'\ \ \[#+\]\ 100%\ \ 3\.0\ MiB\ /\ 3\.0\ MiB\ \ ($rate|--/s)\ \ in\  ]]
	[[ "$output" == *"stored 'big2' (3145728 bytes)"* ]]
	# Co-located, the copy is reported per 256 KiB: the first draw, before
	# the end, shows the ETA.
	[[ "$output" =~ storing\ \'big2\'\ \ \[[#.]+\]\ +[0-9]+%\ \ [0-9.]+\ [KM]iB\ /\ 3\.0\ MiB\ \ ($rate|--/s)\ \ ETA\ [0-9-]+:[0-9-]{2}:[0-9-]{2} ]]
	# get: the network phase draws (libmooncake's progress callback), then the file.
	run -0 script -qec "$cmd object get big2 $MC_DIR/data/big2.out" /dev/null
	[[ "$output" =~ fetching\ \'big2\'\ \ \[[#.]+\]\ +[0-9]+%\ .*\ ETA\  ]]
	[[ "$output" =~ fetching\ \'big2\'\ \ \[#+\]\ 100%\ \ 3\.0\ MiB\ /\ 3\.0\ MiB\ \ ($rate|--/s)\ \ in\  ]]
	[[ "$output" == *"big2.out  ["*"] 100%  3.0 MiB / 3.0 MiB  "* ]]
	[[ "$output" == *"wrote 'big2' (3145728 bytes) to $MC_DIR/data/big2.out"* ]]
	cmp "$MC_DIR/data/big" "$MC_DIR/data/big2.out"
	# Over TCP too (one 16 MiB chunk: the final line), value to a pipe.
	run -0 script -qec "MC_DISABLE_SHM=1 $cmd object get big2 | cmp - $MC_DIR/data/big" /dev/null
	[[ "$output" =~ fetching\ \'big2\'\ \ \[#+\]\ 100%\ \ 3\.0\ MiB\ /\ 3\.0\ MiB ]]
	# A pipe of unknown size: bytes and rate, then the bar once its size is known.
	run -0 script -qec "cat $MC_DIR/data/big | $cmd object put big4 -" /dev/null
	[[ "$output" =~ stdin\ \ [0-9.]+\ MiB\ \ ($rate|--/s) ]] || [[ "$output" == *"stdin  ["* ]]
	[[ "$output" == *"stdin  ["*"] 100%  3.0 MiB / 3.0 MiB"* ]]
	# -o json on a terminal: no progress, stdout is only the JSON.
	run -0 script -qec "$cmd -o json object put big3 $MC_DIR/data/big" /dev/null
	[[ "$output" != *"100%"* ]] && [[ "$output" != *storing* ]]
	[ "$(tr -d '\r' <<<"$output" | jq -r .size)" = 3145728 ]
	# Small objects: no progress even on a terminal.
	printf small >"$MC_DIR/data/small"
	run -0 script -qec "$cmd object put small $MC_DIR/data/small" /dev/null
	[ "$(tr -d '\r' <<<"$output")" = "stored 'small' (5 bytes)" ]
	run -0 script -qec "$cmd object get small $MC_DIR/data/small.out" /dev/null
	[ "$(tr -d '\r' <<<"$output")" = "wrote 'small' (5 bytes) to $MC_DIR/data/small.out" ]
}

# complete_words WORD...: runs the completion function on the words (the
# last one is being completed) and prints COMPREPLY, one per line.
complete_words() {
	bash -c '
		source cli/mooncakectl.bash-completion
		COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
		_mooncakectl
		printf "%s\n" "${COMPREPLY[@]}"' complete_words "$@"
}

@test "bash completion: loads, registers, completes groups, verbs, options and files" {
	run -0 bash -c 'source cli/mooncakectl.bash-completion && complete -p mooncakectl'
	[ "$output" = "complete -F _mooncakectl mooncakectl" ]
	run -0 complete_words mooncakectl ""
	[ "$(echo $output)" = "status segment client object tenant evict snapshot metadata trace node version help" ]
	run -0 complete_words mooncakectl s
	[ "$(echo $output)" = "status segment snapshot" ]
	run -0 complete_words mooncakectl --master http://h:1 -j seg
	[ "$output" = segment ]
	run -0 complete_words mooncakectl --ti
	[ "$output" = --timeout ]
	run -0 complete_words mooncakectl -o ""
	[ "$(echo $output)" = "table json" ]
	run -0 complete_words mooncakectl segment ""
	[ "$(echo $output)" = "list show drain unmount" ]
	run -0 complete_words mooncakectl object ""
	[ "$(echo $output)" = "put get stat exist prefix rm ls pin unpin" ]
	run -0 complete_words mooncakectl node release --s
	[ "$(echo $output)" = "--state-dir --shm-dir --secret-file" ]
	run -0 complete_words mooncakectl tenant q
	[ "$output" = quota ]
	run -0 complete_words mooncakectl snapshot ""
	[ "$(echo $output)" = "list create" ]
	run -0 complete_words mooncakectl object put k f --
	[ "$(echo $output)" = "--replicas --disk-replicas --dfs-replicas --write-through --pin-ttl --hard-pin --group --overwrite --master --rpc --tenant --token-file --secret-file --timeout --rdma-device --rdma-qps --rdma-lanes --output --json --help --version" ]
	# Global options anywhere: after the verb, between group and verb.
	run -0 complete_words mooncakectl object ls -o json --p
	[ "$output" = --prefix ]
	run -0 complete_words mooncakectl object -j ""
	[ "$(echo $output)" = "put get stat exist prefix rm ls pin unpin" ]
	run -0 complete_words mooncakectl object --tenant t put k --rpc h:1 cli/mooncakectl.bash-c
	[ "$output" = cli/mooncakectl.bash-completion ]
	run -0 complete_words mooncakectl object put k --ver
	[ "$output" = --version ]
	run -0 complete_words mooncakectl help s
	[ "$(echo $output)" = "status segment snapshot" ]
	run -0 complete_words mooncakectl trace lease --pin-path cli/mooncakectl.bash-c
	[ -z "$output" ]
	run -0 complete_words mooncakectl segment drain ID --g
	[ "$output" = --grace ]
	run -0 complete_words mooncakectl evict --ra
	[ "$output" = --ratio ]
	run -0 complete_words mooncakectl object put key cli/mooncakectl.bash-c
	[ "$output" = cli/mooncakectl.bash-completion ]
	# A verb's option value and a finished command complete nothing.
	run -0 complete_words mooncakectl object put k f --replicas ""
	[ -z "$output" ]
	run -0 complete_words mooncakectl status ""
	[ -z "$output" ]
}

@test "man page: renders without warnings and documents every group and option" {
	run -0 --separate-stderr env LC_ALL=C.UTF-8 groff -man -Tutf8 -ww cli/mooncakectl.1
	[ -z "$stderr" ]
	page=$output
	for w in status "segment list" "segment show" "segment drain" "segment unmount" \
		"client list" "object put" "object get" "object stat" "object exist" "object rm" \
		"object ls" "object pin" "object unpin" "tenant list" "tenant quota" evict \
		"snapshot list" "snapshot create" "metadata get" "metadata put" "metadata rm" \
		"trace lease" "node release" version --master --rpc --tenant \
		--token-file --timeout --version MOONCAKE_MASTER MOONCAKE_RPC MOONCAKE_TOKEN_FILE \
		"EXIT STATUS" immutable OBJECT_HAS_LEASE "git names"; do
		grep -qF -- "$w" <<<"$(sed 's/.\x08//g' <<<"$page")" || { echo "missing: $w"; false; }
	done
	if command -v man >/dev/null; then
		run -0 --separate-stderr env MANWIDTH=80 man -l cli/mooncakectl.1
		[[ "$output" == *"mooncakectl - administer a Mooncake Store cluster"* ]]
	fi
}
