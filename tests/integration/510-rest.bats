#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# The master's REST admin API (docs/rest-api.md, daemon/master/master-http*.c):
# every endpoint with its documented fields (jq), the error paths (400, 401,
# 404, 405, 409, 413, 503), binary keys through percent-encoding, cursor
# paging, drain and unmount, evict, quotas.  The master runs with an
# admin_token_file: non-GET calls carry the bearer token (api), GETs not.
bats_require_minimum_version 1.5.0

load helpers

setup() {
	mc_init
	[ -x "$NODE" ] || skip "mooncake-node not built"
	command -v curl >/dev/null && command -v jq >/dev/null || skip "curl and jq are needed"
	TOKEN="tok-$RANDOM-$RANDOM"
	printf '%s\n' "$TOKEN" >"$MC_DIR/token"
	start_master --admin_token_file="$MC_DIR/token" --lease_ttl_ms=30000
	MHTTP=$(sed -n 's/.*ready: rpc on [^ ,]*, http on \([^ ,]*\),.*/\1/p' "$MC_DIR/master.log")
	[ -n "$MHTTP" ]
	start_node h1
	SEG=$(curl -sf "http://$MHTTP/api/v1/segments" | jq -r '.segments[0].id')
	[ ${#SEG} = 32 ]
}

teardown() {
	stop_all
}

# api METHOD PATH [curl args]: $code = HTTP status, $body = the response body.
api() {
	local m=$1 p=$2
	shift 2
	code=$(curl -s -o "$BATS_TEST_TMPDIR/b" -w '%{http_code}' -X "$m" \
		-H "Authorization: Bearer $TOKEN" "$@" "http://$MHTTP$p")
	body=$(cat "$BATS_TEST_TMPDIR/b")
}

# expect STATUS CODE: the last api call answered STATUS with error code CODE.
expect() {
	[ "$code" = "$1" ] || { echo "status $code, expected $1: $body"; return 1; }
	[ "$(jq -r .error.code <<<"$body")" = "$2" ] || { echo "body: $body"; return 1; }
	[ -n "$(jq -r .error.message <<<"$body")" ]
}

# pct HEX: every byte percent-encoded.
pct() { sed 's/../%&/g' <<<"$1"; }
hex() { printf '%s' "$1" | od -An -v -tx1 | tr -d ' \n'; }

@test "cluster, segments, one segment and clients have the documented fields" {
	put_random k1 5000
	api GET /api/v1/cluster
	[ "$code" = 200 ]
	jq -e '.role == "single" and .version == "0.1.0" and (.uptime_s | type) == "number"
		and .capacity_bytes == 16777216 and .allocated_bytes >= 5000 and .held_bytes == 0
		and .used_ratio > 0 and .used_ratio < 1 and .objects == 1 and .segments == 1
		and .clients == 1 and .tenants == 1 and .soft_pinned == 0 and .groups == 0
		and .evicted_objects == 0 and .evicted_bytes == 0
		and .eviction.high_watermark == 0.9 and .eviction.low_watermark == 0.8
		and .eviction.on_put == true
		and .lease_ttl_ms == 30000' <<<"$body"
	api GET /api/v1/segments
	[ "$code" = 200 ]
	jq -e --arg s "$SEG" '.segments | length == 1 and (.[0] | .id == $s and .name == "h1-0"
		and (.node | length) == 32 and (.host | length) > 0
		and (.endpoint | test("^127.0.0.1:[0-9]+$")) and (.shm_path | startswith("/dev/shm/"))
		and .size == 16777216 and .used >= 5000 and .free == .size - .used and .held == 0
		and .used_ratio > 0 and .status == "ok" and .protocol == "tcp")' <<<"$body"
	node=$(jq -r '.segments[0].node' <<<"$body")
	api GET "/api/v1/segments/$SEG"
	[ "$code" = 200 ]
	jq -e --arg s "$SEG" '.id == $s and .objects == 1 and .drain_deadline_ms == null
		and .status == "ok"' <<<"$body"
	api GET /api/v1/clients
	[ "$code" = 200 ]
	now=$(date +%s%3N)
	jq -e --arg n "$node" --arg s "$SEG" --argjson now "$now" '.clients | length == 1 and
		(.[0] | .id == $n and .segments == [$s] and .silent_ms < 5000
		 and (.last_heartbeat_ms - $now | fabs) < 10000)' <<<"$body"
	# HEAD is served by the GET routes, without a body
	run -0 curl -s -I "http://$MHTTP/api/v1/cluster"
	[[ "$output" == "HTTP/1.1 200"* ]]
}

@test "one object: fields, no lease granted by the read, remove" {
	head -c 5000 /dev/urandom >"$MC_DIR/d"
	ctl object put "doc/k1" "$MC_DIR/d" --hard-pin
	api GET /api/v1/objects/doc%2Fk1
	[ "$code" = 200 ]
	jq -e --arg s "$SEG" '.key == "doc/k1" and .key_hex == "646f632f6b31"
		and .tenant == "default" and .size == 5000 and .state == "complete"
		and (.checksum | test("^xxh3:[0-9a-f]{16}$")) and .data_type == 0 and .group == null
		and .hard_pin == true and .soft_pin_deadline_ms == null and .lease_deadline_ms == null
		and .put_start_ms == null and (.writer | length) == 32 and (.replicas | length) == 1
		and (.replicas[0] | .type == "memory" and .status == "complete" and .segment == $s
		     and .segment_name == "h1-0" and (.endpoint | test(":[0-9]+$"))
		     and .offset >= 0 and .size == 5000)' <<<"$body"
	# the read granted no lease: a plain remove goes through
	api DELETE /api/v1/objects/doc%2Fk1
	[ "$code" = 200 ]
	jq -e '.removed == true' <<<"$body"
	# its block stays used, held, while its writer's grant lasts
	# (write_grant_ttl_ms): what eviction cannot free
	api GET "/api/v1/segments/$SEG"
	jq -e '.held >= 5000 and .used >= .held' <<<"$body"
	api GET /api/v1/cluster
	jq -e '.held_bytes >= 5000 and .allocated_bytes >= .held_bytes' <<<"$body"
	api GET /api/v1/objects/doc%2Fk1
	expect 404 OBJECT_NOT_FOUND
	api DELETE /api/v1/objects/doc%2Fk1
	expect 404 OBJECT_NOT_FOUND
	api GET "/api/v1/objects/nope?tenant=nobody"
	expect 404 OBJECT_NOT_FOUND
	# a put in progress: "processing", with its start time and writer
	run -0 "$RPC" "$MASTER_ADDR" put_start busy 2000 7
	[[ "$output" == OK* ]]
	api GET /api/v1/objects/busy
	now=$(date +%s%3N)
	jq -e --argjson now "$now" '.state == "processing" and .checksum == null
		and (.put_start_ms - $now | fabs) < 10000 and .lease_deadline_ms == null
		and .writer == "00006d632d7270630000000000000007"
		and .replicas[0].status == "processing"' <<<"$body"
	api GET /api/v1/objects
	jq -e '.objects == [{"key":"busy","key_hex":"62757379","size":2000,
		"state":"processing","replicas":0}]' <<<"$body"
	api DELETE /api/v1/objects/busy
	expect 409 REPLICA_IS_NOT_READY
	api POST /api/v1/objects/busy/pin -d '{"ttl_ms":1000}'
	[ "$code" = 409 ]
}

@test "binary keys round-trip through percent-encoding (bytes 0x00-0xff)" {
	all=$(for i in $(seq 0 255); do printf '%02x' "$i"; done)
	run -0 "$RPC" "$MASTER_ADDR" put "hex:$all" 1000 5
	[[ "$output" == *put_end=OK* ]]
	api GET "/api/v1/objects/$(pct "$all")"
	[ "$code" = 200 ]
	jq -e --arg h "$all" '.key == null and .key_hex == $h and .size == 1000' <<<"$body"
	api GET /api/v1/objects
	jq -e --arg h "$all" '[.objects[] | select(.key_hex == $h)] | length == 1' <<<"$body"
	# upper-case hex digits decode too; the same key, found
	api GET "/api/v1/objects/$(pct "$all" | tr a-f A-F)"
	[ "$code" = 200 ]
	api DELETE "/api/v1/objects/$(pct "$all")"
	[ "$code" = 200 ]
	api GET "/api/v1/objects/$(pct "$all")"
	expect 404 OBJECT_NOT_FOUND

	# through mooncakectl (argv: bytes 0x01-0xff), data included
	k=$(printf "$(for i in $(seq 1 255); do printf '\\x%02x' "$i"; done)")
	kh=$(hex "$k")
	[ ${#kh} = 510 ]
	head -c 3000 /dev/urandom >"$MC_DIR/d"
	ctl object put "$k" "$MC_DIR/d"
	api GET "/api/v1/objects/$(pct "$kh")"
	[ "$code" = 200 ]
	jq -e --arg h "$kh" '.key == null and .key_hex == $h and .size == 3000' <<<"$body"
	api DELETE "/api/v1/objects/$(pct "$kh")"
	[ "$code" = 200 ]
	run ctl object get "$k" "$MC_DIR/out"
	[ "$status" -ne 0 ]
	# a UTF-8 key comes back as a string too
	ctl object put "héllo" "$MC_DIR/d"
	api GET /api/v1/objects/h%C3%A9llo
	jq -e '.key == "héllo" and .key_hex == "68c3a96c6c6f"' <<<"$body"
}

@test "listing pages through every key exactly once; prefix and regex filters" {
	for i in $(seq 1 23); do
		"$RPC" "$MASTER_ADDR" put "p/$i" 100 5 >/dev/null
	done
	for i in $(seq 1 5); do
		"$RPC" "$MASTER_ADDR" put "q/$i" 100 5 >/dev/null
	done
	list() {	# list QUERY: all keys over all pages, one per line; $pages
		local cur="" q=$1
		pages=0
		while :; do
			api GET "/api/v1/objects?limit=5$q${cur:+&cursor=$cur}"
			[ "$code" = 200 ] || { echo "page: $body" >&2; return 1; }
			jq -e '(.objects | length) <= 5 and all(.objects[]; .size == 100
				and .state == "complete" and .replicas == 1)' <<<"$body" >/dev/null || return 1
			jq -r '.objects[].key' <<<"$body"
			pages=$((pages + 1))
			cur=$(jq -r '.next_cursor // empty' <<<"$body")
			[ -n "$cur" ] || break
		done
	}
	list "" >"$MC_DIR/all"
	[ "$(wc -l <"$MC_DIR/all")" = 28 ]
	[ "$(sort -u "$MC_DIR/all" | wc -l)" = 28 ]
	diff <(sort "$MC_DIR/all") <( (seq 1 23 | sed 's|^|p/|'; seq 1 5 | sed 's|^|q/|') | sort)
	list "&prefix=p%2F" >"$MC_DIR/p"
	[ "$pages" -ge 5 ]
	diff <(sort "$MC_DIR/p") <(seq 1 23 | sed 's|^|p/|' | sort)
	# ^q/[1-3]$ (POSIX extended), percent-encoded
	list "&regex=%5Eq%2F%5B1-3%5D%24" >"$MC_DIR/q"
	diff <(sort "$MC_DIR/q") <(printf 'q/%s\n' 1 2 3)
	# one page holds them all
	api GET "/api/v1/objects?limit=10000"
	[ "$(jq '.objects | length' <<<"$body")" = 28 ]
	jq -e '.next_cursor == null' <<<"$body"
	# an unknown tenant lists nothing
	api GET "/api/v1/objects?tenant=nobody"
	jq -e '.objects == [] and .next_cursor == null' <<<"$body"
}

@test "bad input: 400 for parameters, JSON and encoding; 404; 405; 413" {
	for q in "limit=0" "limit=10001" "limit=x" "limit=" "bogus=1" "limit=5&limit=6" \
		"cursor=zz" "cursor=0011" "prefix=a&regex=b" ; do
		api GET "/api/v1/objects?$q"
		expect 400 BAD_REQUEST || { echo "query $q"; false; }
	done
	api GET "/api/v1/objects?regex=%28"
	expect 400 INVALID_PARAMS
	for p in /api/v1/objects/%zz /api/v1/objects/a%2 /api/v1/objects/%; do
		api GET "$p"
		expect 400 BAD_REQUEST || { echo "path $p"; false; }
	done
	api GET "/api/v1/objects?prefix=%zz"
	expect 400 BAD_REQUEST
	api GET /api/v1/cluster?x=1
	expect 400 BAD_REQUEST
	api GET /api/v1/segments/not-a-uuid
	expect 400 BAD_REQUEST
	api GET /api/v1/segments/0123456789abcdef0123456789abcdef
	expect 404 SEGMENT_NOT_FOUND
	api POST /api/v1/segments/0123456789abcdef0123456789abcdef/drain
	expect 404 SEGMENT_NOT_FOUND
	api DELETE /api/v1/segments/0123456789abcdef0123456789abcdef
	expect 404 SEGMENT_NOT_FOUND
	for p in /api/v1 /api/v1/nothing /api/v1/objects/a/b /api/v1/segments/x/y /api/v1/objects/; do
		api GET "$p"
		expect 404 NOT_FOUND || { echo "path $p"; false; }
	done
	api PUT /api/v1/cluster
	expect 405 METHOD_NOT_ALLOWED
	run -0 curl -s -D - -o /dev/null -X PATCH -H "Authorization: Bearer $TOKEN" \
		"http://$MHTTP/api/v1/objects/k"
	[[ "$output" == *" 405 "* ]]
	grep -qi '^allow: GET, DELETE' <<<"$output"
	# bad JSON bodies
	put_random k1 1000
	for b in '{' '[1]' '"x"' '{"ttl_ms":"x"}' '{"ttl_ms":-1}' '{"ttl":5}' '{}' \
		'{"ttl_ms":1,"ttl_ms":2}'; do
		api POST /api/v1/objects/k1/pin -d "$b"
		expect 400 BAD_REQUEST || { echo "body $b"; false; }
	done
	api POST /api/v1/objects/k1/pin
	expect 400 BAD_REQUEST
	api PUT /api/v1/tenants/default/quota -d '{"quota_bytes":1.5}'
	expect 400 BAD_REQUEST
	api POST /api/v1/evict -d '{"target_ratio":2}'
	expect 400 BAD_REQUEST
	api POST "/api/v1/segments/$SEG/drain" -d '{"grace_ms":"soon"}'
	expect 400 BAD_REQUEST
	api DELETE "/api/v1/objects/k1?force=maybe"
	expect 400 BAD_REQUEST
	# 413: a key over 4096 bytes, a tenant over 128, a body over 1 MiB
	long=$(head -c 4097 /dev/zero | tr '\0' a)
	api GET "/api/v1/objects/$long"
	expect 413 TOO_LARGE
	api GET "/api/v1/objects/${long:0:4096}"
	expect 404 OBJECT_NOT_FOUND
	api GET "/api/v1/objects/k1?tenant=${long:0:129}"
	expect 413 TOO_LARGE
	head -c 1100000 /dev/zero | tr '\0' ' ' >"$MC_DIR/big"
	api POST /api/v1/evict --data-binary @"$MC_DIR/big"
	expect 413 PAYLOAD_TOO_LARGE
	# snapshots: a list, then a new one at its head; arguments are refused
	api GET /api/v1/snapshots
	[ "$code" = 200 ] && [ "$(echo "$body" | jq '.snapshots | type')" = '"array"' ]
	api POST /api/v1/snapshots
	[ "$code" = 201 ] && [ "$(echo "$body" | jq '.objects')" -ge 1 ]
	id=$(echo "$body" | jq .id)
	api GET /api/v1/snapshots
	[ "$(echo "$body" | jq '.snapshots[0].id')" = "$id" ]
	api POST "/api/v1/snapshots?x=1"
	expect 400 BAD_REQUEST
	run -0 curl -sf "http://$MHTTP/health"
}

@test "auth: non-GET calls need the bearer token, GETs are open" {
	put_random k1 1000
	run -0 curl -s -D - -o "$BATS_TEST_TMPDIR/b" -X DELETE "http://$MHTTP/api/v1/objects/k1"
	[[ "$output" == *" 401 "* ]]
	grep -qi '^www-authenticate: Bearer' <<<"$output"
	[ "$(jq -r .error.code "$BATS_TEST_TMPDIR/b")" = UNAUTHORIZED ]
	for h in "Authorization: Bearer wrong" "Authorization: Bearer ${TOKEN}x" \
		"Authorization: Bearer ${TOKEN:0:5}" "Authorization: Basic $TOKEN" "Authorization:"; do
		run -0 curl -s -o /dev/null -w '%{http_code}' -X DELETE -H "$h" \
			"http://$MHTTP/api/v1/objects/k1"
		[ "$output" = 401 ] || { echo "header '$h': $output"; false; }
	done
	run -0 curl -s -o /dev/null -w '%{http_code}' -X PUT -d '{"quota_bytes":1}' \
		"http://$MHTTP/api/v1/tenants/t/quota"
	[ "$output" = 401 ]
	run -0 curl -s -o /dev/null -w '%{http_code}' -X POST "http://$MHTTP/api/v1/evict"
	[ "$output" = 401 ]
	# nothing was removed; GETs need no token
	run -0 curl -s -o /dev/null -w '%{http_code}' "http://$MHTTP/api/v1/objects/k1"
	[ "$output" = 200 ]
	run -0 curl -s -o /dev/null -w '%{http_code}' "http://$MHTTP/api/v1/cluster"
	[ "$output" = 200 ]
	api DELETE /api/v1/objects/k1
	[ "$code" = 200 ]
	# a missing or empty token file stops the master at start (exit 2)
	run -2 "$MASTER" --rpc_address=127.0.0.1 --rpc_port=0 --http_port=0 \
		--state_dir="$MC_DIR/m2" --admin_token_file="$MC_DIR/none"
	[[ "$output" == *"cannot read admin_token_file"* ]]
	printf '\n' >"$MC_DIR/empty"
	run -2 "$MASTER" --rpc_address=127.0.0.1 --rpc_port=0 --http_port=0 \
		--state_dir="$MC_DIR/m2" --admin_token_file="$MC_DIR/empty"
	[[ "$output" == *"is empty"* ]]
}

@test "remove: a leased object is 409 unless forced; pin and unpin" {
	run -0 "$RPC" "$MASTER_ADDR" put leased 1000 5
	run -0 "$RPC" "$MASTER_ADDR" get leased    # grants a 30 s read lease
	api GET /api/v1/objects/leased
	now=$(date +%s%3N)
	jq -e --argjson now "$now" '.lease_deadline_ms - $now > 20000' <<<"$body"
	api DELETE /api/v1/objects/leased
	expect 409 OBJECT_HAS_LEASE
	api DELETE "/api/v1/objects/leased?force=false"
	expect 409 OBJECT_HAS_LEASE
	api DELETE "/api/v1/objects/leased?force=true"
	[ "$code" = 200 ]
	api GET /api/v1/objects/leased
	expect 404 OBJECT_NOT_FOUND

	put_random k1 1000
	api POST /api/v1/objects/k1/pin -d '{"ttl_ms":60000}'
	[ "$code" = 200 ]
	now=$(date +%s%3N)
	jq -e --argjson now "$now" '.pinned == true and
		(.soft_pin_deadline_ms - $now - 60000 | fabs) < 5000' <<<"$body"
	api GET /api/v1/objects/k1
	jq -e --argjson now "$now" '(.soft_pin_deadline_ms - $now - 60000 | fabs) < 5000' <<<"$body"
	api GET /api/v1/cluster
	jq -e '.soft_pinned == 1' <<<"$body"
	api DELETE /api/v1/objects/k1/pin
	[ "$code" = 200 ]
	jq -e '.pinned == false' <<<"$body"
	api GET /api/v1/objects/k1
	jq -e '.soft_pin_deadline_ms == null' <<<"$body"
	api POST /api/v1/objects/nope/pin -d '{"ttl_ms":1000}'
	expect 404 OBJECT_NOT_FOUND
	api POST /api/v1/objects/k1/pin -d '{"ttl_ms":99999999999}'
	expect 400 INVALID_PARAMS
}

@test "evict frees the bytes it reports; quota PUT then an over-quota put fails" {
	for i in 1 2 3; do put_random "e$i" 100000; done
	api GET /api/v1/cluster
	before=$(jq .allocated_bytes <<<"$body")
	[ "$before" -ge 300000 ]
	api POST /api/v1/evict -d '{"target_ratio":0}'
	[ "$code" = 200 ]
	jq -e '.objects == 3 and .bytes >= 300000 and .used_ratio == 0' <<<"$body"
	freed=$(jq .bytes <<<"$body")
	api GET /api/v1/cluster
	jq -e --argjson b "$before" --argjson f "$freed" \
		'.allocated_bytes == $b - $f and .objects == 0 and .evicted_objects == 3' <<<"$body"
	api POST /api/v1/evict
	[ "$code" = 200 ]
	jq -e '.objects == 0 and .bytes == 0' <<<"$body"

	api GET /api/v1/tenants/nobody/quota
	expect 404 TENANT_NOT_REGISTERED
	api PUT /api/v1/tenants/default/quota -d '{"quota_bytes":50000}'
	[ "$code" = 200 ]
	jq -e '.tenant == "default" and .quota_bytes == 50000 and .charged_bytes == 0
		and .objects == 0' <<<"$body"
	run put_random big 100000
	[ "$status" -ne 0 ]
	[[ "$output" == *TENANT_QUOTA_EXCEEDED* || "$output" == *"quota"* ]]
	put_random small 10000
	api GET /api/v1/tenants/default/quota
	jq -e '.charged_bytes == 10000 and .objects == 1' <<<"$body"
	# a new tenant is created by its quota; listed with its usage
	api PUT "/api/v1/tenants/team%20a/quota" -d '{"quota_bytes":0}'
	[ "$code" = 200 ]
	jq -e '.tenant == "team a" and .tenant_hex == "7465616d2061"' <<<"$body"
	api GET /api/v1/tenants
	jq -e '[.tenants[] | select(.name == "default")][0] | .quota_bytes == 50000
		and .charged_bytes == 10000 and .objects == 1' <<<"$body"
	jq -e '[.tenants[].name] | sort == ["default", "team a"]' <<<"$body"
}

@test "drain stops allocations (409 twice), DELETE unmounts; grace_ms unmounts by itself" {
	put_random k1 1000
	put_random k2 1000
	api POST "/api/v1/segments/$SEG/drain"
	[ "$code" = 200 ]
	jq -e --arg s "$SEG" '.id == $s and .status == "draining"' <<<"$body"
	api POST "/api/v1/segments/$SEG/drain"
	expect 409 UNAVAILABLE_IN_CURRENT_STATUS
	# still readable, no longer allocatable
	get_compare k1
	run put_random k3 1000
	[ "$status" -ne 0 ]
	api DELETE "/api/v1/segments/$SEG"
	[ "$code" = 200 ]
	jq -e --arg s "$SEG" '.unmounted == $s and .objects_dropped == 2' <<<"$body"
	api GET "/api/v1/segments/$SEG"
	expect 404 SEGMENT_NOT_FOUND
	api GET /api/v1/segments
	jq -e '.segments == []' <<<"$body"
	api GET /api/v1/objects/k1
	expect 404 OBJECT_NOT_FOUND
	api GET /api/v1/clients
	jq -e '.clients[0].segments == []' <<<"$body"

	start_node h2
	seg2=$(curl -sf "http://$MHTTP/api/v1/segments" | jq -r '.segments[0].id')
	api POST "/api/v1/segments/$seg2/drain" -d '{"grace_ms":1000}'
	[ "$code" = 200 ]
	now=$(date +%s%3N)
	jq -e --argjson now "$now" '.status == "draining" and
		(.drain_deadline_ms - $now - 1000 | fabs) < 1000' <<<"$body"
	for i in $(seq 1 40); do
		api GET "/api/v1/segments/$seg2"
		[ "$code" = 404 ] && break
		sleep 0.1
	done
	expect 404 SEGMENT_NOT_FOUND
}

@test "without admin_token_file non-GET calls need no token" {
	stop_all
	start_master
	MHTTP=$(sed -n 's/.*ready: rpc on [^ ,]*, http on \([^ ,]*\),.*/\1/p' "$MC_DIR/master.log")
	run -0 curl -s -o /dev/null -w '%{http_code}' -X POST "http://$MHTTP/api/v1/evict"
	[ "$output" = 200 ]
}
