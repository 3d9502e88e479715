#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# The HTTP metadata server on the master's admin port (GET/PUT/DELETE
# /metadata?key=, daemon/master/master-http-metadata.c), as the original's
# transfer engine uses it through MC_METADATA_SERVER: bytes back as put
# (JSON and binary), percent-encoded keys, the original's statuses and
# texts (404, 400, the rpc_meta rule), the limits (413, 507) and gauges, the admin
# token on mutations, and the KV surviving a kill -9 (oplog) and a
# snapshot + kill -9.  (A failover under oplog = etcd: 750-etcd.bats.)
bats_require_minimum_version 1.5.0

load helpers

setup() {
	mc_init
	command -v curl >/dev/null && command -v jq >/dev/null || skip "curl and jq are needed"
	TOKEN="tok-$RANDOM-$RANDOM"
	printf '%s\n' "$TOKEN" >"$MC_DIR/token"
}

teardown() {
	stop_all
}

# md METHOD KEY [curl args]: KEY is sent percent-encoded (every byte), with
# the admin token; $code = the status, $ctype = the Content-Type, the body
# in $BATS_TEST_TMPDIR/b (and $body, as text).
md() {
	local m=$1 k=$2
	shift 2
	local out
	out=$(curl -s -o "$BATS_TEST_TMPDIR/b" -w '%{http_code} %{content_type}' -X "$m" \
		-H "Authorization: Bearer $TOKEN" "$@" "http://$MASTER_HTTP/metadata?key=$(pct "$k")")
	code=${out%% *}
	ctype=${out#* }
	body=$(tr -d '\0' <"$BATS_TEST_TMPDIR/b")
}

pct() { printf '%s' "$1" | od -An -v -tx1 | tr -d ' \n' | sed 's/../%&/g'; }

expect_error() {
	[ "$code" = "$1" ] || { echo "status $code, expected $1: $body"; return 1; }
	[ "$(jq -r .error.code <<<"$body")" = "$2" ] || { echo "body: $body"; return 1; }
}

@test "metadata: put, get byte for byte (JSON and binary), delete; the original's statuses and texts" {
	start_master --admin_token_file="$MC_DIR/token"
	U=http://$MASTER_HTTP/metadata
	# a transfer engine's segment descriptor, under a key with '/', ':' and '@'
	printf '{"name":"node-a:17000","protocol":"tcp","buffers":[{"addr":1,"length":2}]}' \
		>"$MC_DIR/seg.json"
	md PUT "mooncake/ram/node-a:17000@x" --data-binary @"$MC_DIR/seg.json" \
		-H 'Content-Type: application/json'
	[ "$code" = 200 ] && [ "$body" = "metadata updated" ]
	md GET "mooncake/ram/node-a:17000@x"
	[ "$code" = 200 ] && [ "$ctype" = application/json ]
	cmp "$MC_DIR/seg.json" "$BATS_TEST_TMPDIR/b"
	# the way curl_easy_escape sends it (reserved bytes encoded, the rest as is)
	run -0 curl -sf "$U?key=mooncake%2Fram%2Fnode-a%3A17000%40x"
	[ "$output" = "$(cat "$MC_DIR/seg.json")" ]

	# binary: NULs, 0xff, a CR LF, in the key and in the value
	head -c 100000 /dev/urandom >"$MC_DIR/bin"
	printf '\0\r\n\377' >>"$MC_DIR/bin"
	key=$(printf 'b\001in\377')
	md PUT "$key" --data-binary @"$MC_DIR/bin"
	[ "$code" = 200 ]
	md GET "$key"
	[ "$code" = 200 ]
	cmp "$MC_DIR/bin" "$BATS_TEST_TMPDIR/b"
	# an empty value is a value
	md PUT empty --data-binary ''
	[ "$code" = 200 ]
	md GET empty
	[ "$code" = 200 ] && [ ! -s "$BATS_TEST_TMPDIR/b" ]
	# a PUT replaces
	md PUT empty --data-binary 'second'
	md GET empty
	[ "$code" = 200 ] && [ "$body" = second ]

	md DELETE "$key"
	[ "$code" = 200 ] && [ "$body" = "metadata deleted" ]
	md GET "$key"
	[ "$code" = 404 ] && [ "$body" = "metadata not found" ]
	md DELETE "$key"
	[ "$code" = 404 ] && [ "$body" = "metadata not found" ]

	# no key, an empty key: the original's 400 (GET, PUT and DELETE)
	for m in GET PUT DELETE; do
		run -0 curl -s -w ' %{http_code}' -X "$m" -H "Authorization: Bearer $TOKEN" "$U"
		[ "$output" = "Missing key parameter 400" ]
		run -0 curl -s -w ' %{http_code}' -X "$m" -H "Authorization: Bearer $TOKEN" "$U?key="
		[ "$output" = "Missing key parameter 400" ]
	done
	# a parameter besides key, a key twice, a bad percent-encoding: 400 JSON
	code=$(curl -s -o "$BATS_TEST_TMPDIR/b" -w '%{http_code}' "$U?key=a&kye=b"); body=$(cat "$BATS_TEST_TMPDIR/b")
	expect_error 400 BAD_REQUEST
	code=$(curl -s -o "$BATS_TEST_TMPDIR/b" -w '%{http_code}' "$U?key=a&key=b"); body=$(cat "$BATS_TEST_TMPDIR/b")
	expect_error 400 BAD_REQUEST
	code=$(curl -s -o "$BATS_TEST_TMPDIR/b" -w '%{http_code}' "$U?key=%zz"); body=$(cat "$BATS_TEST_TMPDIR/b")
	expect_error 400 BAD_REQUEST
	# other methods: 405
	run -0 curl -s -o /dev/null -w '%{http_code}' -X POST "$U?key=a"
	[ "$output" = 405 ]
}

@test "metadata: an rpc_meta key is set once (400 Duplicate rpc_meta key not allowed), again after a delete" {
	start_master
	md PUT "mooncake/rpc_meta/node-a" --data-binary '{"ip":"10.0.0.1","port":1}'
	[ "$code" = 200 ]
	md PUT "mooncake/rpc_meta/node-a" --data-binary '{"ip":"10.0.0.1","port":1}'
	[ "$code" = 400 ] && [ "$body" = "Duplicate rpc_meta key not allowed" ]
	md GET "mooncake/rpc_meta/node-a"
	[ "$body" = '{"ip":"10.0.0.1","port":1}' ]
	md DELETE "mooncake/rpc_meta/node-a"
	[ "$code" = 200 ]
	md PUT "mooncake/rpc_meta/node-a" --data-binary '{"ip":"10.0.0.2","port":2}'
	[ "$code" = 200 ]
	md GET "mooncake/rpc_meta/node-a"
	[ "$body" = '{"ip":"10.0.0.2","port":2}' ]
	# other keys are replaced as often as one likes
	md PUT "mooncake/ram/node-a" --data-binary 1
	md PUT "mooncake/ram/node-a" --data-binary 2
	[ "$code" = 200 ]
}

@test "metadata: limits: key length and value size (413), metadata_max_keys and metadata_max_bytes (507)" {
	start_master --metadata_max_keys=3 --metadata_max_bytes=300K
	# the key: 4096 bytes fit, 4097 do not
	k4096=$(head -c 4096 /dev/zero | tr '\0' k)
	md PUT "$k4096" --data-binary v
	[ "$code" = 200 ]
	md GET "$k4096"
	[ "$code" = 200 ] && [ "$body" = v ]
	md PUT "${k4096}k" --data-binary v
	expect_error 413 TOO_LARGE
	md GET "${k4096}k"
	expect_error 413 TOO_LARGE
	md DELETE "$k4096"
	[ "$code" = 200 ]
	# the value: 1 MiB - 8 KiB fits (the bytes limit aside), one more byte
	# does not, and a body over 1 MiB is refused by the server
	head -c $((1048576 - 8192)) /dev/urandom >"$MC_DIR/max"
	head -c $((1048576 - 8192 + 1)) /dev/urandom >"$MC_DIR/over"
	head -c $((1048576 + 1)) /dev/urandom >"$MC_DIR/huge"
	md PUT big --data-binary @"$MC_DIR/over"
	expect_error 413 TOO_LARGE
	md PUT big --data-binary @"$MC_DIR/huge"
	[ "$code" = 413 ]
	md PUT big --data-binary @"$MC_DIR/max"
	expect_error 507 METADATA_KV_FULL     # over metadata_max_bytes
	jq -e '.error.message | test("metadata_max_bytes")' <<<"$body"
	head -c 200000 /dev/urandom >"$MC_DIR/200k"
	md PUT a --data-binary @"$MC_DIR/200k"
	[ "$code" = 200 ]
	md PUT b --data-binary @"$MC_DIR/200k"
	expect_error 507 METADATA_KV_FULL
	md PUT a --data-binary @"$MC_DIR/200k"   # a replacement needs only the difference
	[ "$code" = 200 ]
	md PUT b --data-binary x
	md PUT c --data-binary x
	[ "$code" = 200 ]
	md PUT d --data-binary x
	expect_error 507 METADATA_KV_FULL     # a fourth key
	md DELETE c
	md PUT d --data-binary x
	[ "$code" = 200 ]
	md GET a
	cmp "$MC_DIR/200k" "$BATS_TEST_TMPDIR/b"
	# the gauges: a, b and d, keys plus values
	run -0 curl -sf "http://$MASTER_HTTP/metrics"
	grep -qx 'mooncake_master_metadata_keys 3' <<<"$output"
	grep -qx 'mooncake_master_metadata_bytes 200005' <<<"$output"
}

@test "metadata: with an admin token, PUT and DELETE need it (the transfer engine sends MC_METADATA_HTTP_TOKEN), GET does not" {
	start_master --admin_token_file="$MC_DIR/token"
	U=http://$MASTER_HTTP/metadata
	run -0 curl -s -o /dev/null -w '%{http_code}' -X PUT --data-binary v "$U?key=k"
	[ "$output" = 401 ]
	run -0 curl -s -o /dev/null -w '%{http_code}' -X PUT -H 'Authorization: Bearer wrong' \
		--data-binary v "$U?key=k"
	[ "$output" = 401 ]
	md PUT k --data-binary v
	[ "$code" = 200 ]
	run -0 curl -s "$U?key=k"
	[ "$output" = v ]
	run -0 curl -s -o /dev/null -w '%{http_code}' -X DELETE "$U?key=k"
	[ "$output" = 401 ]
	md DELETE k
	[ "$code" = 200 ]
}

@test "metadata: the KV survives kill -9 (oplog), then a snapshot and kill -9 (snapshot + oplog after it)" {
	port=$(free_port)
	start_master --rpc_port="$port" --snapshot_interval_s=0 --admin_token_file="$MC_DIR/token"
	head -c 50000 /dev/urandom >"$MC_DIR/v1"
	md PUT k1 --data-binary @"$MC_DIR/v1"
	md PUT gone --data-binary x
	md PUT "mooncake/rpc_meta/a" --data-binary '{"a":1}'
	md PUT k2 --data-binary old
	md PUT k2 --data-binary new
	md DELETE gone
	[ "$code" = 200 ]
	kill -KILL "$MASTER_PID"
	_mc_reap "$MASTER_PID" || _mc_reap "$MASTER_PID"
	start_master --rpc_port="$port" --snapshot_interval_s=0 --admin_token_file="$MC_DIR/token"
	md GET k1
	[ "$code" = 200 ]
	cmp "$MC_DIR/v1" "$BATS_TEST_TMPDIR/b"
	md GET k2
	[ "$body" = new ]
	md GET gone
	[ "$code" = 404 ]
	md PUT "mooncake/rpc_meta/a" --data-binary '{"a":2}'
	[ "$code" = 400 ]       # still there: the rule holds after the restart

	# a snapshot, then changes after it; kill -9: both come back
	run -0 curl -sf -X POST -H "Authorization: Bearer $TOKEN" "http://$MASTER_HTTP/api/v1/snapshots"
	md PUT k3 --data-binary after
	md DELETE k2
	kill -KILL "$MASTER_PID"
	_mc_reap "$MASTER_PID" || _mc_reap "$MASTER_PID"
	start_master --rpc_port="$port" --snapshot_interval_s=0 --admin_token_file="$MC_DIR/token"
	grep -q 'loaded snapshot' "$MC_DIR/master.log"   # k1 and the rpc_meta key come from it
	md GET k1
	cmp "$MC_DIR/v1" "$BATS_TEST_TMPDIR/b"
	md GET k3
	[ "$body" = after ]
	md GET k2
	[ "$code" = 404 ]
	md GET "mooncake/rpc_meta/a"
	[ "$body" = '{"a":1}' ]
}

@test "metadata: mooncakectl metadata put, get (file, stdout, -o json), rm; exit 4 when missing; the token" {
	[ -x "$CTL" ] || skip "mooncakectl not built"
	start_master --admin_token_file="$MC_DIR/token"
	c() { "$CTL" --master "http://$MASTER_HTTP" --token-file "$MC_DIR/token" "$@"; }
	printf '{"name":"n","buffers":[]}' >"$MC_DIR/v.json"
	run -0 c metadata put mooncake/ram/n "$MC_DIR/v.json"
	[ "$output" = "put mooncake/ram/n (25 bytes)" ]
	run -0 c metadata get mooncake/ram/n
	[ "$output" = '{"name":"n","buffers":[]}' ]
	run -0 c -o json metadata get mooncake/ram/n
	jq -e '.key == "mooncake/ram/n" and .bytes == 25 and .json.name == "n"' <<<"$output"
	# binary through stdin and a file; what curl reads is the same bytes
	head -c 5000 /dev/urandom >"$MC_DIR/bin"
	run -0 c metadata put "k with space/ü" - <"$MC_DIR/bin"
	run -0 c metadata get "k with space/ü" "$MC_DIR/out"
	cmp "$MC_DIR/bin" "$MC_DIR/out"
	run -0 curl -sf -o "$MC_DIR/out2" "http://$MASTER_HTTP/metadata?key=k%20with%20space%2F%C3%BC"
	cmp "$MC_DIR/bin" "$MC_DIR/out2"
	run -0 c -o json metadata get "k with space/ü"
	jq -e '.bytes == 5000 and .json == null' <<<"$output"
	# the rpc_meta rule, missing keys, no token
	run -0 c metadata put rpc_meta/n "$MC_DIR/v.json"
	run -1 c metadata put rpc_meta/n "$MC_DIR/v.json"
	[[ "$output" == *"Duplicate rpc_meta key not allowed"* ]]
	run -0 c metadata rm mooncake/ram/n
	[ "$output" = "removed mooncake/ram/n" ]
	run -4 c metadata rm mooncake/ram/n
	[[ "$output" == *"metadata not found"* ]]
	run -4 c metadata get mooncake/ram/n
	run -1 "$CTL" --master "http://$MASTER_HTTP" metadata put x "$MC_DIR/v.json"
	[[ "$output" == *UNAUTHORIZED* ]]
	head -c $((1048576 + 1)) /dev/zero >"$MC_DIR/huge"
	run -1 c metadata put big "$MC_DIR/huge"
	[[ "$output" == *"over 1048576 bytes"* ]]
}
