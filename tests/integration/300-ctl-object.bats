#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# mooncakectl object put|get|stat|exist|rm|ls against a real master and
# node on loopback: data through files and stdin/stdout, keys with spaces
# and UTF-8, -o json checked with jq, error messages and exit codes
# (1 failed, 2 usage, 3 the key exists, 4 not found), options anywhere on
# the line (getopt_long).
bats_require_minimum_version 1.5.0

load helpers

setup_file() {
	cd "$BATS_TEST_DIRNAME/../.."
	O=${MC_BUILD:-$PWD/.output}
	export CTL=$O/bin/mooncakectl
	D=$BATS_FILE_TMPDIR
	if [ ! -x "$O/bin/mooncake-node" ]; then
		export SKIP_ALL="mooncake-node not built"
		return 0
	fi
	"$O/bin/mooncake-master" --rpc_address=127.0.0.1 --rpc_port=0 --http_port=0 --state_dir="$D/master" \
		2>"$D/master.log" 3>&- &
	echo $! >"$D/master.pid"
	local i port=
	for i in $(seq 1 100); do
		port=$(sed -n 's/.*ready: rpc on 127\.0\.0\.1:\([0-9]*\),.*/\1/p' "$D/master.log")
		[ -n "$port" ] && break
		sleep 0.05
	done
	[ -n "$port" ] || { cat "$D/master.log" >&2; return 1; }
	export MOONCAKE_RPC=127.0.0.1:$port
	"$O/bin/mooncake-node" --master="$MOONCAKE_RPC" --data_address=127.0.0.1 --data_port=0 --http_port=0 \
		--segment_size=64M --segments=1 --state_dir="$D/node" --name=ctl \
		2>"$D/node.log" 3>&- &
	echo $! >"$D/node.pid"
	for i in $(seq 1 100); do
		grep -q mounted "$D/node.log" && return 0
		sleep 0.05
	done
	cat "$D/node.log" >&2
	return 1
}

teardown_file() {
	D=$BATS_FILE_TMPDIR
	for p in node master; do
		[ -f "$D/$p.pid" ] && mc_stop_pid "$(cat "$D/$p.pid")" "$p"
	done
	grep -o '/dev/shm/mooncake-[0-9a-f]*' "$D/node.log" 2>/dev/null | xargs -r rm -f
	mc_check_sanitizer "$D"/*.log
}

setup() {
	[ -z "${SKIP_ALL:-}" ] || skip "$SKIP_ALL"
}

@test "version prints the versions; -o json too" {
	run -0 "$CTL" version
	[[ "${lines[0]}" == "mooncakectl 0.1.0 (libmooncake 0.1.0)" ]]
	run -0 "$CTL" -o json version
	[ "$(echo "$output" | jq -r .version)" = 0.1.0 ]
	[ "$(echo "$output" | jq -r .library)" = 0.1.0 ]
}

@test "put from a file, get to a file and to stdout" {
	head -c 300000 /dev/urandom >"$BATS_TEST_TMPDIR/in"
	run -0 "$CTL" object put file-key "$BATS_TEST_TMPDIR/in"
	[[ "$output" == "stored 'file-key' (300000 bytes)" ]]
	run -0 "$CTL" object get file-key "$BATS_TEST_TMPDIR/out"
	cmp "$BATS_TEST_TMPDIR/in" "$BATS_TEST_TMPDIR/out"
	"$CTL" object get file-key >"$BATS_TEST_TMPDIR/out2"
	cmp "$BATS_TEST_TMPDIR/in" "$BATS_TEST_TMPDIR/out2"
	"$CTL" object get file-key - >"$BATS_TEST_TMPDIR/out3"
	cmp "$BATS_TEST_TMPDIR/in" "$BATS_TEST_TMPDIR/out3"
	MC_DISABLE_SHM=1 "$CTL" object get file-key >"$BATS_TEST_TMPDIR/out4"
	cmp "$BATS_TEST_TMPDIR/in" "$BATS_TEST_TMPDIR/out4"
}

@test "put from stdin; a second put of the same key exits 3 and changes nothing" {
	run -0 bash -c "printf 'hello world' | '$CTL' object put stdin-key -"
	run -0 "$CTL" object get stdin-key
	[ "$output" = "hello world" ]
	run -3 bash -c "printf 'other' | '$CTL' object put stdin-key -"
	run -0 "$CTL" object get stdin-key
	[ "$output" = "hello world" ]
}

@test "put dup a.txt, then put dup b.txt: 'exists, unchanged', exit 3, stored false; a.txt's bytes stay" {
	printf 'aaaaaaaaaa' >"$BATS_TEST_TMPDIR/a.txt"                 # 10 B
	printf 'bbbbbbbbbbbbbbbbbbbbbbbbbb' >"$BATS_TEST_TMPDIR/b.txt" # 26 B
	run -0 "$CTL" object put dup "$BATS_TEST_TMPDIR/a.txt"
	[ "$output" = "stored 'dup' (10 bytes)" ]
	run -3 --separate-stderr "$CTL" object put dup "$BATS_TEST_TMPDIR/b.txt"
	[ -z "$output" ]   # nothing claims it was stored
	[[ "$stderr" == "mooncakectl: object 'dup' exists, unchanged (objects are immutable; to replace it: mooncakectl object put --overwrite KEY FILE)" ]]
	run -3 --separate-stderr "$CTL" -o json object put dup "$BATS_TEST_TMPDIR/b.txt"
	[ "$(jq -r .stored <<<"$output")" = false ]
	[ "$(jq -r .key <<<"$output")" = dup ]
	run -0 "$CTL" object get dup
	[ "$output" = aaaaaaaaaa ]
	run -0 "$CTL" -o json object stat dup
	[ "$(jq -r .size <<<"$output")" = 10 ]
	# The documented way to replace it: remove, then put.
	run -0 "$CTL" object rm --force dup
	run -0 "$CTL" -o json object put dup "$BATS_TEST_TMPDIR/b.txt"
	[ "$(jq -r .stored <<<"$output")" = true ]
	run -0 "$CTL" object get dup
	[ "$output" = bbbbbbbbbbbbbbbbbbbbbbbbbb ]
}

@test "put --overwrite replaces an existing value (other size, then same size), and stores a new key" {
	printf 'old-value-old-value' >"$BATS_TEST_TMPDIR/old"
	printf 'NEW' >"$BATS_TEST_TMPDIR/new"
	printf 'XYZ' >"$BATS_TEST_TMPDIR/same"
	run -0 "$CTL" object put ow "$BATS_TEST_TMPDIR/old"
	run -0 "$CTL" object get ow
	[ "$output" = old-value-old-value ]   # leases the old value: the upsert goes through anyway
	run -0 "$CTL" -o json object put --overwrite ow "$BATS_TEST_TMPDIR/new"
	[ "$(jq -r .stored <<<"$output")" = true ]
	run -0 "$CTL" object get ow
	[ "$output" = NEW ]
	run -0 "$CTL" -o json object stat ow
	[ "$(jq -r .size <<<"$output")" = 3 ]
	run -0 "$CTL" object put --overwrite ow "$BATS_TEST_TMPDIR/same"
	run -0 "$CTL" object get ow
	[ "$output" = XYZ ]
	run -0 "$CTL" object put --overwrite ow-fresh "$BATS_TEST_TMPDIR/new"
	[ "$output" = "stored 'ow-fresh' (3 bytes)" ]
	run -0 "$CTL" object get ow-fresh
	[ "$output" = NEW ]
	run -0 "$CTL" -o json object ls --prefix ow
	[ "$(jq -r .count <<<"$output")" = 2 ]
}

@test "object prefix: the longest cached prefix of a chain stops at the first miss" {
	for k in c0 c1 c2 c4; do printf "$k" | "$CTL" object put "chain-$k" -; done
	run -0 "$CTL" object prefix chain-c0 chain-c1 chain-c2 chain-c3 chain-c4
	[ "$output" = 3 ]
	run -0 "$CTL" -o json object prefix chain-c9 chain-c0
	[ "$(jq -r .prefix <<<"$output")" = 0 ]
	[ "$(jq -r .keys <<<"$output")" = 2 ]
	run -0 "$CTL" object prefix chain-c0 chain-c1 chain-c2
	[ "$output" = 3 ]
	run -2 "$CTL" object prefix
}

@test "object ls -o json: global options after the verb, between group and verb, --tenant last" {
	printf 1 | "$CTL" object put opt-anywhere -
	run -0 "$CTL" object ls -o json --prefix opt-
	[ "$(jq -r '.keys[0]' <<<"$output")" = opt-anywhere ]
	run -0 "$CTL" object -j ls --prefix=opt-
	[ "$(jq -r .count <<<"$output")" = 1 ]
	run -0 "$CTL" object ls --prefix opt- --output=json
	[ "$(jq -r .count <<<"$output")" = 1 ]
	printf t | "$CTL" object put tenant-key - --tenant opt-t
	run -0 "$CTL" object get tenant-key --tenant opt-t
	[ "$output" = t ]
	run -4 "$CTL" object get tenant-key
	# --rpc after the verb is used too: a dead port fails the command.
	run -1 "$CTL" object ls --rpc 127.0.0.1:1
	[[ "$output" == *"master 127.0.0.1:1: RPC_FAIL"* ]]
	# "--" ends the options: a key starting with '-'.
	printf d | "$CTL" object put -- -dash-key -
	run -0 "$CTL" object get -o table -- -dash-key
	[ "$output" = d ]
}

@test "keys with spaces and UTF-8" {
	key='a key with spaces — ключ 鍵 🔑'
	run -0 bash -c "printf 'utf8 value' | '$CTL' object put '$key' -"
	run -0 "$CTL" object get "$key"
	[ "$output" = "utf8 value" ]
	run -0 "$CTL" -o json object stat "$key"
	[ "$(echo "$output" | jq -r .key)" = "$key" ]
	run -0 "$CTL" object ls
	[[ "$output" == *"$key"* ]]
	run -0 "$CTL" -j object ls --prefix 'a key with'
	[ "$(echo "$output" | jq -r '.keys[0]')" = "$key" ]
	[ "$(echo "$output" | jq -r .count)" = 1 ]
}

@test "stat: table and JSON fields" {
	printf 'twelve bytes' | "$CTL" object put stat-key -
	run -0 "$CTL" object stat stat-key
	[[ "$output" == *"size:      12"* ]]
	[[ "$output" == *"memory"*"complete"*"127.0.0.1:"* ]]
	run -0 "$CTL" -o json object stat stat-key
	j=$output
	[ "$(echo "$j" | jq -r .size)" = 12 ]
	[ "$(echo "$j" | jq -r '.checksum | length')" = 16 ]
	[ "$(echo "$j" | jq -r '.replicas | length')" = 1 ]
	[ "$(echo "$j" | jq -r '.replicas[0].type')" = memory ]
	[ "$(echo "$j" | jq -r '.replicas[0].status')" = complete ]
	[ "$(echo "$j" | jq -r '.replicas[0].size')" = 12 ]
	[[ "$(echo "$j" | jq -r '.replicas[0].endpoint')" == 127.0.0.1:* ]]
	[ "$(echo "$j" | jq -r '.replicas[0].segment_id | length')" = 32 ]
	[ "$(echo "$j" | jq -r '.lease_ttl_ms')" -gt 0 ]
}

@test "put -o json, --replicas, --hard-pin, --pin-ttl" {
	run -0 bash -c "printf v | '$CTL' -o json object put pinned - --hard-pin --pin-ttl 1000 --replicas 1"
	[ "$(echo "$output" | jq -r .stored)" = true ]
	[ "$(echo "$output" | jq -r .size)" = 1 ]
	[ "$(echo "$output" | jq -r .key)" = pinned ]
}

@test "exist: 0 when present, 4 when absent; JSON" {
	printf x | "$CTL" object put exist-key -
	run -0 "$CTL" object exist exist-key
	[ "$output" = exists ]
	run -4 "$CTL" object exist no-such-key
	[ "$output" = "not found" ]
	run -0 "$CTL" -o json object exist exist-key
	[ "$(echo "$output" | jq -r .exists)" = true ]
	run -4 "$CTL" -o json object exist no-such-key
	[ "$(echo "$output" | jq -r .exists)" = false ]
}

@test "rm: leased object needs --force; not found is 4" {
	printf x | "$CTL" object put rm-key -
	"$CTL" object get rm-key >/dev/null   # takes a read lease
	# No REST API to ask for the deadline (nothing on port 1): the lease's length.
	MOONCAKE_MASTER=http://127.0.0.1:1 run -1 "$CTL" object rm rm-key
	[ "$output" = "mooncakectl: object 'rm-key': OBJECT_HAS_LEASE (a reader holds a read lease: every get, stat or exist grants one for the master's lease_ttl_ms, 10 s by default); --force removes it anyway" ]
	run -0 "$CTL" object rm rm-key --force
	[ "$output" = "removed 'rm-key'" ]
	run -4 "$CTL" object get rm-key
	[ "$output" = "mooncakectl: object 'rm-key': OBJECT_NOT_FOUND (object not found)" ]
	run -4 "$CTL" object rm rm-key
	[[ "$output" == *OBJECT_NOT_FOUND* ]]
	run -4 "$CTL" object stat rm-key
	printf x | "$CTL" object put rm-json -
	run -0 "$CTL" -o json object rm --force rm-json
	[ "$(echo "$output" | jq -r .removed)" = true ]
}

@test "ls: prefix, regex, limit, JSON" {
	for i in 1 2 3 4 5; do printf "$i" | "$CTL" object put "ls-$i" -; done
	printf x | "$CTL" object put other-ls -
	run -0 "$CTL" object ls --prefix ls-
	[ "$(echo "$output" | sort | tr '\n' ' ')" = "ls-1 ls-2 ls-3 ls-4 ls-5 " ]
	run -0 "$CTL" object ls --regex '^ls-[24]$'
	[ "$(echo "$output" | sort | tr '\n' ' ')" = "ls-2 ls-4 " ]
	run -0 "$CTL" object ls --prefix ls- --limit 2
	[ "$(echo "$output" | wc -l)" = 2 ]
	run -0 "$CTL" -o json object ls --prefix=ls-
	[ "$(echo "$output" | jq -r .count)" = 5 ]
	[ "$(echo "$output" | jq -r '.keys | length')" = 5 ]
	[ "$(echo "$output" | jq -r .truncated)" = false ]
	run -0 "$CTL" -o json object ls --prefix nothing-
	[ "$(echo "$output" | jq -r .count)" = 0 ]
}

@test "usage errors exit 2" {
	run -2 "$CTL"
	run -2 "$CTL" object
	run -2 "$CTL" object frob
	run -2 "$CTL" object put
	run -2 "$CTL" object put onlykey
	run -2 "$CTL" object get
	run -2 "$CTL" object get a b c
	run -2 "$CTL" object put k - --replicas 0
	run -2 "$CTL" object put k - --replicas many
	run -2 "$CTL" object put k - --bogus
	[[ "$output" == *"object put: unknown option '--bogus'"* ]]
	run -2 "$CTL" object rm k --force=yes
	[[ "$output" == *"object rm: option '--force' takes no value"* ]]
	run -2 "$CTL" object put k - --replicas
	[[ "$output" == *"object put: option '--replicas' needs a value"* ]]
	run -2 "$CTL" object ls --t
	[[ "$output" == *"ambiguous option '--t' (--tenant, --token-file, --timeout)"* ]]
	run -2 "$CTL" object ls --prefix a --regex b
	run -2 "$CTL" object ls --regex '('
	[[ "$output" == *"bad regex"* ]]
	run -2 "$CTL" object ls --limit 0
	run -2 "$CTL" -o yaml version
	run -2 "$CTL" --nope version
	run -2 "$CTL" frobnicate
	[[ "$output" == *"unknown command 'frobnicate'"* ]]
}

@test "failed operations exit 1" {
	run -1 "$CTL" object put k /nonexistent/file
	[[ "$output" == *"/nonexistent/file"* ]]
	run -1 bash -c "'$CTL' object put empty-key - </dev/null"
	[[ "$output" == *"object 'empty-key': empty value"* ]]
	run -1 "$CTL" --rpc 127.0.0.1:1 object get k
	[[ "$output" == *"master 127.0.0.1:1: RPC_FAIL"* ]]
	printf x | "$CTL" object put out-key -
	run -1 "$CTL" object get out-key /nonexistent/dir/file
}

@test "object pin / unpin: soft pins with a TTL; errors named" {
	printf pinned | "$CTL" object put pin-key -
	run -0 "$CTL" object pin pin-key --ttl 60000
	[ "$output" = "pinned 'pin-key' for 60000 ms" ]
	run -0 "$CTL" -o json object pin pin-key --ttl 5000
	[ "$(echo "$output" | jq -r .pinned)" = true ]
	[ "$(echo "$output" | jq -r .ttl_ms)" = 5000 ]
	run -0 "$CTL" object unpin pin-key
	[ "$output" = "unpinned 'pin-key'" ]
	run -4 "$CTL" object pin no-such-key --ttl 1000
	[[ "$output" == *"'no-such-key'"*"OBJECT_NOT_FOUND"* ]]
	run -2 "$CTL" object pin pin-key
	[[ "$output" == *"--ttl"* ]]
	run -2 "$CTL" object pin pin-key --ttl 0
	# over the master's 24 h maximum: the master refuses it
	run -1 "$CTL" object pin pin-key --ttl 86400001
	[[ "$output" == *"INVALID_PARAMS"* ]]
}

@test "--tenant separates namespaces" {
	printf a | "$CTL" --tenant t1 object put tkey -
	run -4 "$CTL" --tenant t2 object get tkey
	run -0 "$CTL" --tenant t1 object get tkey
	[ "$output" = a ]
}
