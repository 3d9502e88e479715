#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# mooncakectl's REST commands against a real master and nodes on loopback
# (docs/rest-api.md): status, segment list|show|drain|unmount, client list,
# tenant list|quota, evict, snapshot list|create, the admin token; tables for
# people, -o json checked with jq, error messages naming the subject, exit
# codes (1 failed, 4 not found), segments named by name or id prefix, the
# lease's end in the refusal of an rm, the master's numbers kept as they
# were written (0.9 stays 0.9).  Skipped (with a message) when the master
# answers 404 on /api/v1/cluster, i.e. was built without the REST API.
bats_require_minimum_version 1.5.0

load helpers

setup_file() {
	mc_init "$BATS_FILE_TMPDIR/mc"
	[ -x "$NODE" ] || { export SKIP_REST="mooncake-node not built"; return 0; }
	command -v curl >/dev/null && command -v jq >/dev/null ||
		{ export SKIP_REST="curl and jq are needed"; return 0; }
	unset MOONCAKE_TOKEN_FILE
	start_master
	local code
	code=$(curl -s -o /dev/null -w '%{http_code}' "http://$MASTER_HTTP/api/v1/cluster")
	if [ "$code" = 404 ]; then
		export SKIP_REST="the master has no REST admin API (GET /api/v1/cluster is 404): needs the rest branch"
		return 0
	fi
	start_node r1
}

teardown_file() {
	stop_all
}

setup() {
	[ -z "${SKIP_REST:-}" ] || skip "$SKIP_REST"
	mc_init "$BATS_FILE_TMPDIR/mc"	# the paths: setup_file's shell variables are gone
}

teardown() {
	if [ -n "${OWN_CLUSTER:-}" ]; then
		stop_all
	fi
}

# seg_of NODE: the id of the node's segment (matched by its data endpoint).
seg_of() {
	ctl -o json segment list | jq -r --arg ep "$(node_endpoint "$1")" \
		'.segments[] | select(.endpoint == $ep) | .id' | head -n1
}

@test "status: the table and the JSON describe the cluster" {
	put_random s1 64K
	put_random s2 32K
	run -0 ctl -o json status
	j=$output
	[ "$(jq -r .role <<<"$j")" = single ]
	[ "$(jq -r .version <<<"$j")" = 0.1.0 ]
	[ "$(jq -r .objects <<<"$j")" = 2 ]
	[ "$(jq -r .segments <<<"$j")" = 1 ]
	[ "$(jq -r '.clients >= 1' <<<"$j")" = true ]
	[ "$(jq -r '.allocated_bytes >= 98304' <<<"$j")" = true ]
	[ "$(jq -r '.used_ratio > 0 and .used_ratio < 1' <<<"$j")" = true ]
	cap=$(jq -r .capacity_bytes <<<"$j")
	[ "$cap" = "$(ctl -o json segment list | jq '[.segments[].size] | add')" ]
	run -0 ctl status
	[[ "$output" == *"capacity:"*"MiB"* ]]
	for f in role: used: held: ratio: objects: segments: clients: tenants: uptime:; do
		grep -qE "^$f +[^ ]" <<<"$output" || { echo "no $f"; false; }
	done
	grep -qE '^objects: +2$' <<<"$output"
	grep -qE '^segments: +1$' <<<"$output"
	grep -qE '^role: +single$' <<<"$output"
	grep -qE '^watermarks: +high 90%, low 80%, on put$' <<<"$output"
}

@test "segment list and show: aligned table, exact bytes in JSON" {
	id=$(seg_of r1)
	[ -n "$id" ]
	run -0 ctl segment list
	[[ "${lines[0]}" =~ ^ID\ +NAME\ +ENDPOINT\ +SIZE\ +USED\ +FREE\ +USE%\ +STATUS\ +PROTO$ ]]
	[[ "${lines[1]}" == "$id "*"$(node_endpoint r1)"*" ok "* ]]
	[[ "${lines[1]}" == *" MiB "* ]]
	run -0 ctl -o json segment list
	[ "$(jq -r '.segments | length' <<<"$output")" = 1 ]
	[ "$(jq -r '.segments[0] | .size == .used + .free' <<<"$output")" = true ]
	[ "$(jq -r '.segments[0].status' <<<"$output")" = ok ]

	run -0 ctl segment show "$id"
	grep -qE "^id: +$id\$" <<<"$output"
	grep -qE "^endpoint: +$(node_endpoint r1)\$" <<<"$output"
	grep -qE '^status: +ok$' <<<"$output"
	grep -qE '^objects: +[0-9]+$' <<<"$output"
	grep -qE '^held: +[0-9.]+ [KMG]?i?B$' <<<"$output"
	run -0 ctl -j segment show "$id"
	[ "$(jq -r .id <<<"$output")" = "$id" ]
	[ "$(jq -r 'has("objects") and has("drain_deadline_ms")' <<<"$output")" = true ]
}

@test "segment show: an unknown id or name exits 4, naming the segment" {
	id=$(seg_of r1)
	bad=$(tr '0-9a-f' '1-9a-f0' <<<"$id")
	run -4 --separate-stderr ctl segment show "$bad"
	[ -z "$output" ]
	[[ "$stderr" == "mooncakectl: segment $bad: SEGMENT_NOT_FOUND ("* ]]
	run -4 --separate-stderr ctl -o json segment show "$bad"
	[ -z "$output" ]
	# Neither a name nor an id prefix: not found, naming what was given.
	run -4 --separate-stderr ctl segment show "not a/uuid"
	[[ "$stderr" == "mooncakectl: segment not a/uuid: SEGMENT_NOT_FOUND ("* ]]
	[[ "$stderr" != *"has no GET"* ]]
	run -4 ctl segment unmount "$bad"
	[[ "$output" == *"segment $bad: SEGMENT_NOT_FOUND"* ]]
	run -4 ctl segment drain "$bad"
	[[ "$output" == *"segment $bad: SEGMENT_NOT_FOUND"* ]]
}

@test "client list: the node's client with its segment" {
	id=$(seg_of r1)
	run -0 ctl client list
	[[ "${lines[0]}" =~ ^ID\ +LAST\ HEARTBEAT\ +SILENT\ +SEGMENTS$ ]]
	[ "${#lines[@]}" -ge 2 ]
	run -0 ctl -o json client list
	[ "$(jq -r --arg s "$id" '[.clients[] | select(.segments | index($s))] | length' <<<"$output")" = 1 ]
	[ "$(jq -r '.clients[0].last_heartbeat_ms > 1700000000000' <<<"$output")" = true ]
}

@test "tenant list and quota: show, set with suffixes, enforced, percent-encoded names" {
	ctl --tenant t1 object put tk1 "$BATS_TEST_FILENAME"
	run -0 ctl tenant list
	[[ "${lines[0]}" =~ ^TENANT\ +OBJECTS\ +CHARGED\ +QUOTA$ ]]
	grep -qE '^t1 +1 +[0-9.]+ (B|KiB) +unlimited$' <<<"$output"
	run -0 ctl -o json tenant list
	[ "$(jq -r '.tenants[] | select(.name == "t1") | .objects' <<<"$output")" = 1 ]
	[ "$(jq -r '.tenants[] | select(.name == "t1") | .charged_bytes' <<<"$output")" -ge "$(stat -c %s "$BATS_TEST_FILENAME")" ]

	run -0 ctl tenant quota t1
	grep -qE '^quota: +unlimited$' <<<"$output"
	grep -qE '^objects: +1$' <<<"$output"
	run -0 ctl tenant quota t1 1M
	grep -qE '^quota: +1.0 MiB$' <<<"$output"
	run -0 ctl -o json tenant quota t1
	[ "$(jq -r .quota_bytes <<<"$output")" = 1048576 ]
	[ "$(jq -r .tenant <<<"$output")" = t1 ]
	# The quota holds: 2 MiB more does not fit.
	head -c 2M /dev/urandom >"$BATS_TEST_TMPDIR/2m"
	run -1 ctl --tenant t1 object put big "$BATS_TEST_TMPDIR/2m"
	[[ "$output" == *"object 'big': TENANT_QUOTA_EXCEEDED"* ]]
	run -0 ctl -j tenant quota t1 0
	[ "$(jq -r .quota_bytes <<<"$output")" = 0 ]
	run -0 ctl --tenant t1 object put big "$BATS_TEST_TMPDIR/2m"

	# A name with a space and a slash travels percent-encoded.
	run -0 ctl -o json tenant quota "a b/c" 64KiB
	[ "$(jq -r .tenant <<<"$output")" = "a b/c" ]
	[ "$(jq -r .quota_bytes <<<"$output")" = 65536 ]
	run -0 ctl -o json tenant list
	[ "$(jq -r '.tenants[] | select(.name == "a b/c") | .quota_bytes' <<<"$output")" = 65536 ]

	run -4 --separate-stderr ctl tenant quota nosuch-tenant
	[[ "$stderr" == "mooncakectl: tenant 'nosuch-tenant': "* ]]
}

@test "evict: to a ratio, hard-pinned objects stay; the default watermark evicts nothing here" {
	put_random e1 256K
	put_random e2 256K
	put_random keep 64K --hard-pin
	run -0 ctl -o json evict
	[ "$(jq -r .objects <<<"$output")" = 0 ]
	before=$(ctl -o json status | jq .allocated_bytes)
	run -0 ctl -o json evict --ratio 0
	[ "$(jq -r '.objects >= 2' <<<"$output")" = true ]
	[ "$(jq -r '.bytes >= 524288' <<<"$output")" = true ]
	after=$(ctl -o json status | jq .allocated_bytes)
	[ "$after" -lt "$before" ]
	run -4 ctl object exist e1
	run -0 ctl object exist keep
	get_compare keep
	run -0 ctl evict --ratio 0.0
	[[ "$output" =~ ^evicted\ 0\ objects\ \(0\ B\)\;\ used\ ratio\ now\ [0-9.]+%$ ]]
}

@test "snapshot create and list: newest first" {
	run -0 ctl -o json snapshot create
	id=$(jq -r .id <<<"$output")
	[[ "$id" =~ ^[0-9]+$ ]]
	[ "$(jq -r '.created_ms > 1700000000000' <<<"$output")" = true ]
	run -0 ctl snapshot create
	[[ "$output" =~ ^snapshot\ [0-9]+\ created:\ [0-9]+\ objects, ]]
	run -0 ctl -o json snapshot list
	[ "$(jq -r '.snapshots | length >= 2' <<<"$output")" = true ]
	[ "$(jq -r '.snapshots[0].id > .snapshots[1].id' <<<"$output")" = true ]
	[ "$(jq -r --argjson id "$id" '[.snapshots[] | select(.id == $id)] | length' <<<"$output")" = 1 ]
	run -0 ctl snapshot list
	[[ "${lines[0]}" =~ ^\ *ID\ +CREATED\ +OBJECTS\ +SIZE\ +OPLOG\ SEQ\ +DURATION$ ]]
	[ "${#lines[@]}" -ge 3 ]
}

@test "segment drain then unmount: draining, a second drain is refused, the replica is dropped" {
	start_node r2
	id=$(seg_of r2)
	[ -n "$id" ]
	# One replica on each node, so r2's segment is not empty while draining.
	put_random d1 64K --replicas 2
	[ "$(ctl -o json object stat d1 | jq '.replicas | length')" = 2 ]
	run -0 ctl -o json segment drain "$id" --grace 600000
	[ "$(jq -r .id <<<"$output")" = "$id" ]
	[ "$(jq -r .status <<<"$output")" = draining ]
	run -0 ctl -o json segment show "$id"
	[ "$(jq -r .status <<<"$output")" = draining ]
	[ "$(jq -r '.drain_deadline_ms > 1700000000000' <<<"$output")" = true ]
	run -1 --separate-stderr ctl segment drain "$id"
	[[ "$stderr" == "mooncakectl: segment $id: "* ]]
	# New puts avoid the draining segment.
	put_random d2 64K --replicas 2
	[ "$(ctl -o json object stat d2 | jq '.replicas | length')" = 1 ]

	kill_node r2
	run -0 ctl segment unmount "$id"
	# objects_dropped: d1's replica (0 if only objects left without a replica count).
	[[ "$output" =~ ^unmounted\ segment\ $id\ \([01]\ objects\ dropped\)$ ]]
	run -4 ctl segment show "$id"
	get_compare d1
	run -0 ctl -o json segment list
	[ "$(jq -r --arg id "$id" '[.segments[] | select(.id == $id)] | length' <<<"$output")" = 0 ]
}

@test "admin token: GETs are open, changes need --token-file or MOONCAKE_TOKEN_FILE" {
	OWN_CLUSTER=1
	mc_init "$BATS_TEST_TMPDIR/tok"
	printf 's3cret-token\n' >"$MC_DIR/token"
	printf 'wrong\n' >"$MC_DIR/wrong"
	start_master --admin_token_file="$MC_DIR/token"
	run -0 ctl -o json status
	[ "$(jq -r .role <<<"$output")" = single ]
	run -1 --separate-stderr ctl evict
	[[ "$stderr" == "mooncakectl: evict: UNAUTHORIZED ("*"--token-file"* ]]
	run -1 ctl --token-file "$MC_DIR/wrong" evict
	[[ "$output" == *"UNAUTHORIZED"* ]]
	run -0 ctl --token-file "$MC_DIR/token" -o json evict
	[ "$(jq -r .objects <<<"$output")" = 0 ]
	MOONCAKE_TOKEN_FILE=$MC_DIR/token run -0 ctl tenant quota tk 1G
	grep -qE '^quota: +1.0 GiB$' <<<"$output"
}

@test "-o json status keeps the master's numbers: 0.9 stays 0.9, no 17-digit noise" {
	raw=$(curl -sf "http://$MASTER_HTTP/api/v1/cluster")
	run -0 ctl -o json status
	[[ "$output" == *'"high_watermark": 0.9,'* ]]
	[[ "$output" == *'"low_watermark": 0.8'* ]]
	# Every number with a fraction as the master wrote it (uptime_s moves between the calls).
	nums() { tr -d ' \n' | grep -oE '"[a-z_]+":-?[0-9]+\.[0-9]+([eE][-+]?[0-9]+)?' | grep -v '^"uptime_s"' | sort; }
	want=$(nums <<<"$raw")
	got=$(nums <<<"$output")
	[ -n "$want" ]
	[ "$want" = "$got" ]
	# uptime_s: at most the master's 12 significant digits.
	up=$(tr -d ' ' <<<"$output" | grep -oE '"uptime_s":[0-9.]+' | cut -d: -f2)
	[ "$(tr -d . <<<"$up" | sed 's/^0*//' | wc -c)" -le 13 ]
}

@test "rm right after a get: the refusal says when the read lease ends and that --force exists" {
	put_random lease-k 1000
	ctl object get lease-k >/dev/null   # a read lease of lease_ttl_ms (10 s)
	run -1 --separate-stderr ctl object rm lease-k
	[ -z "$output" ]
	re="^mooncakectl: object 'lease-k': OBJECT_HAS_LEASE \(a reader's lease runs until [0-9]{2}:[0-9]{2}:[0-9]{2}, ([0-9.]+s|[0-9]+ms) from now\); --force removes it anyway$"
	[[ "$stderr" =~ $re ]]
	# The time left is within the 10 s lease.
	left=$(sed -E 's/.*, ([0-9.]+)(s|ms) from now.*/\1 \2/' <<<"$stderr")
	read -r n unit <<<"$left"
	[ "$unit" = ms ] || awk -v n="$n" 'BEGIN { exit !(n > 0 && n <= 10) }'
	# Another tenant: the lookup asks for the right one.
	ctl --tenant "t lease" object put lt "$MC_DIR/data/lease-k"
	ctl object get lt --tenant "t lease" >/dev/null
	run -1 ctl object rm lt --tenant "t lease"
	[[ "$output" =~ "a reader's lease runs until" ]]
	run -0 ctl object rm lease-k --force
	run -0 ctl object rm lt --force --tenant "t lease"
}

@test "segment show n1-0: segments by name and by unique id prefix; an ambiguous prefix lists the candidates" {
	OWN_CLUSTER=1
	mc_init "$BATS_TEST_TMPDIR/names"
	start_master
	# Two segments whose ids share the prefix c0ffee (the node reuses the ids
	# listed in its node.id when their /dev/shm files exist with the right size).
	rnd() { od -An -N12 -tx1 /dev/urandom | tr -d ' \n'; }
	id0=c0ffee00$(rnd) id1=c0ffee11$(rnd)
	mkdir -p "$MC_DIR/node-nm"
	printf 'mooncake-node 1\nclient %s\nsegment %s 16777216\nsegment %s 16777216\n' \
		"$(rnd)$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')" "$id0" "$id1" >"$MC_DIR/node-nm/node.id"
	printf '%s\n%s\n' "$id0" "$id1" >>"$MC_DIR/shm"   # stop_all removes them
	truncate -s 16M "/dev/shm/mooncake-$id0" "/dev/shm/mooncake-$id1"
	start_node nm --segments=2
	run -0 ctl -o json segment list
	[ "$(jq -r '[.segments[].id] | sort | join(" ")' <<<"$output")" = "$(printf '%s\n' "$id0" "$id1" | sort | tr '\n' ' ' | sed 's/ $//')" ]

	# By name.
	name1=$(jq -r --arg id "$id1" '.segments[] | select(.id == $id) | .name' <<<"$output")
	[ "$name1" = nm-1 ]
	run -0 ctl segment show nm-1
	grep -qE "^id: +$id1\$" <<<"$output"
	run -0 ctl -o json segment show nm-0
	[ "$(jq -r .id <<<"$output")" = "$id0" ]
	# By a unique prefix, any case.
	run -0 ctl -o json segment show c0ffee1
	[ "$(jq -r .id <<<"$output")" = "$id1" ]
	run -0 ctl -o json segment show C0FFEE00
	[ "$(jq -r .id <<<"$output")" = "$id0" ]
	# Ambiguous: exit 2, both candidates with their names, nothing on stdout.
	run -2 --separate-stderr ctl segment show c0ffee
	[ -z "$output" ]
	[[ "$stderr" == "mooncakectl: segment c0ffee: ambiguous, it designates 2 segments:"* ]]
	[[ "$stderr" == *"  $id0  nm-0"* ]]
	[[ "$stderr" == *"  $id1  nm-1"* ]]
	# Too short a prefix, and nothing by that name: not found (4).
	run -4 --separate-stderr ctl segment show c0f
	[[ "$stderr" == *"SEGMENT_NOT_FOUND"*"4 hex digits at least"* ]]
	run -4 ctl segment show nm-7
	# drain and unmount take names and prefixes too.
	run -0 ctl segment drain nm-1 --grace 600000
	[[ "$output" == "segment $id1 (nm-1): draining, unmounted when empty or in 10m00s" ]]
	run -0 ctl -o json segment show "$id1"
	[ "$(jq -r .status <<<"$output")" = draining ]
	run -0 ctl segment unmount c0ffee11
	[[ "$output" == "unmounted segment $id1 ("* ]]
	run -0 ctl -o json segment list
	[ "$(jq -r '.segments | length' <<<"$output")" = 1 ]
}
