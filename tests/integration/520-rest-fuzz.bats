#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Malformed HTTP against the master's admin port: bad methods, bad paths and
# percent sequences, raw bytes, overlong request lines and headers (over the
# 64 KiB per-connection memory), huge and broken bodies, pipelining, many
# parallel and idle connections.  Whatever comes in, the master must stay up
# and keep answering /health (and, under MC_BUILD=.output-asan, log no
# sanitizer report: stop_all checks).
bats_require_minimum_version 1.5.0

load helpers

setup() {
	mc_init
	command -v curl >/dev/null && command -v jq >/dev/null || skip "curl and jq are needed"
	start_master
	MHTTP=$(sed -n 's/.*ready: rpc on [^ ,]*, http on \([^ ,]*\),.*/\1/p' "$MC_DIR/master.log")
	[ -n "$MHTTP" ]
}

teardown() {
	stop_all
}

healthy() {
	kill -0 "$MASTER_PID" || { echo "master died"; return 1; }
	run -0 curl -sf --max-time 5 "http://$MHTTP/health"
	[ "$(jq -r .status <<<"$output")" = ok ]
}

# raw FILE: sends FILE's bytes on a fresh connection; prints the status line
# of the answer ("" if the server just closed).
raw() {
	local host=${MHTTP%:*} port=${MHTTP#*:} fd
	exec {fd}<>"/dev/tcp/$host/$port"	# not fd 3: bats reports through it
	cat "$1" >&"$fd" 2>/dev/null || true
	timeout 2 head -n1 <&"$fd" 2>/dev/null | tr -d '\r' || true
	exec {fd}>&-
}

# Never a bare `wait` here: the master is a child of the test shell too.

# rawstr 'printf format': raw with the printf-expanded string.
rawstr() {
	# shellcheck disable=SC2059
	printf "$1" >"$BATS_TEST_TMPDIR/req"
	raw "$BATS_TEST_TMPDIR/req"
}

code() { curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$@"; }

@test "bad methods and request lines" {
	[ "$(code -X FOO "http://$MHTTP/health")" = 405 ]
	[ "$(code -X FOO "http://$MHTTP/nope")" = 404 ]
	[ "$(code -X OPTIONS "http://$MHTTP/api/v1/objects")" = 405 ]
	[ "$(code -X TRACE "http://$MHTTP/api/v1/cluster")" = 405 ]
	for req in 'G@T /health HTTP/1.1\r\nHost: x\r\n\r\n' \
		'GET\r\n\r\n' 'GET /health\r\n\r\n' 'GET /health HTTP/9.9\r\nHost: x\r\n\r\n' \
		' / HTTP/1.1\r\n\r\n' 'GET /health HTTP/1.1\r\nNoColonHeader\r\n\r\n' \
		'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n' 'GET http://x/health HTTP/1.1\r\nHost: x\r\n\r\n' \
		'\r\n\r\n\r\n' 'GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n' \
		'GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n' \
		'POST /api/v1/evict HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n\r\n'; do
		out=$(rawstr "$req")
		[[ -z "$out" || "$out" == HTTP/1.* ]] || { echo "request '$req' -> '$out'"; false; }
	done
	head -c 65536 /dev/urandom >"$BATS_TEST_TMPDIR/junk"
	raw "$BATS_TEST_TMPDIR/junk" >/dev/null
	healthy
}

@test "bad paths and percent sequences" {
	for p in '/api/v1/objects/%zz' '/api/v1/objects/%' '/api/v1/objects/%4' \
		'/api/v1/objects/%%41' '/api/v1/segments/%zz' '/api/v1/tenants/%g0/quota' \
		'/api/v1/objects?tenant=%zz' '/api/v1/objects?%zz=1' '/api/v1/objects/a?prefix=%'; do
		[ "$(code "http://$MHTTP$p")" = 400 ] || { echo "$p"; false; }
	done
	for p in '/../../etc/passwd' '//api//v1//cluster' '/api/v1/objects/..' '/api/v1/./cluster' \
		'/api/v1/objects/a/b/c/d/e/f' '/%2e%2e/health' '/health%00' '/api/v1/objects?a&b&c&d&e&f&g&h&i&j&k&l&m&n&o&p&q&r'; do
		c=$(code --path-as-is "http://$MHTTP$p")
		[[ "$c" =~ ^(400|404)$ ]] || { echo "$p -> $c"; false; }
	done
	# raw bytes and control characters in the path
	out=$(rawstr 'GET /api/v1/objects/\x80\xff\x01\x7f HTTP/1.1\r\nHost: x\r\n\r\n')
	[[ -z "$out" || "$out" == HTTP/1.1\ [0-9]* ]]
	out=$(rawstr 'GET /api/v1/objects/a\tb HTTP/1.1\r\nHost: x\r\n\r\n')
	[[ -z "$out" || "$out" == HTTP/1.1\ [0-9]* ]]
	# a 100 KiB path: over the connection's memory
	long=$(head -c 102400 /dev/zero | tr '\0' a)
	c=$(code "http://$MHTTP/api/v1/objects/$long")
	[[ "$c" =~ ^(000|400|413|414|431)$ ]] || { echo "long path -> $c"; false; }
	# a long query value, still in bounds: a clean 413 for the tenant
	c=$(code "http://$MHTTP/api/v1/objects?tenant=$(head -c 20000 /dev/zero | tr '\0' t)")
	[ "$c" = 413 ]
	healthy
}

@test "overlong headers and huge or broken bodies" {
	# one 100 KiB header, then 200 headers of 1 KiB
	h=$(head -c 102400 /dev/zero | tr '\0' h)
	c=$(code -H "X-Big: $h" "http://$MHTTP/health")
	[[ "$c" =~ ^(000|400|413|431)$ ]] || { echo "big header -> $c"; false; }
	args=()
	for i in $(seq 1 200); do args+=(-H "X-H$i: ${h:0:1024}"); done
	c=$(code "${args[@]}" "http://$MHTTP/health")
	[[ "$c" =~ ^(000|400|413|431)$ ]] || { echo "many headers -> $c"; false; }
	healthy
	# 4 MiB bodies: with a length, chunked, and to a route that takes none
	head -c 4194304 /dev/zero >"$BATS_TEST_TMPDIR/big"
	[ "$(code -X POST --data-binary @"$BATS_TEST_TMPDIR/big" "http://$MHTTP/api/v1/evict")" = 413 ]
	[ "$(code -X POST -H 'Transfer-Encoding: chunked' --data-binary @"$BATS_TEST_TMPDIR/big" \
		"http://$MHTTP/api/v1/evict")" = 413 ]
	[ "$(code -X PUT --data-binary @"$BATS_TEST_TMPDIR/big" \
		"http://$MHTTP/api/v1/tenants/t/quota")" = 413 ]
	# a body announced as 10 GB: refused before it is read
	out=$(rawstr 'POST /api/v1/evict HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000000\r\n\r\nabc')
	[[ "$out" == "HTTP/1.1 413"* ]]
	# a body shorter than announced, then the client goes away
	rawstr 'POST /api/v1/evict HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"tar' >/dev/null &
	pids=($!)
	# binary garbage and deep nesting as JSON
	head -c 100000 /dev/urandom >"$BATS_TEST_TMPDIR/junk"
	[ "$(code -X POST --data-binary @"$BATS_TEST_TMPDIR/junk" "http://$MHTTP/api/v1/evict")" = 400 ]
	printf '%.0s[' $(seq 1 100000) >"$BATS_TEST_TMPDIR/deep"
	[ "$(code -X POST --data-binary @"$BATS_TEST_TMPDIR/deep" "http://$MHTTP/api/v1/evict")" = 400 ]
	[ "$(code -X POST --data-binary '{"target_ratio":1e999}' "http://$MHTTP/api/v1/evict")" = 400 ]
	printf '{"target_ratio":0.5}\0junk' >"$BATS_TEST_TMPDIR/nul"
	[ "$(code -X POST --data-binary @"$BATS_TEST_TMPDIR/nul" "http://$MHTTP/api/v1/evict")" = 400 ]
	wait "${pids[@]}"
	healthy
}

@test "pipelining, abandoned requests, many parallel and idle connections" {
	out=$(rawstr 'GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
	[[ "$out" == "HTTP/1.1 200"* ]]
	# half a request line, then gone
	pids=()
	for i in $(seq 1 20); do rawstr 'GET /api/v1/clu' >/dev/null & pids+=($!); done
	wait "${pids[@]}"
	# 20 idle connections of another host (127.0.0.2) held open while 80
	# requests run, 16 at a time (the per-address limit): all answered
	host=${MHTTP%:*} port=${MHTTP#*:}
	python3 tests/tools/mc-hold-conns.py "$MHTTP" 20 4 --from 127.0.0.2 >"$BATS_TEST_TMPDIR/held" &
	pids+=($!)
	for _ in $(seq 1 50); do [ -s "$BATS_TEST_TMPDIR/held" ] && break; sleep 0.1; done
	for wave in 1 2 3 4 5; do
		w=()
		for i in $(seq 1 16); do
			curl -s -o /dev/null --max-time 10 -w '%{http_code}\n' \
				"http://$MHTTP/api/v1/cluster" >>"$BATS_TEST_TMPDIR/codes" &
			w+=($!)
		done
		wait "${w[@]}"
	done
	[ "$(wc -l <"$BATS_TEST_TMPDIR/codes")" = 80 ]
	[ "$(grep -c '^200$' "$BATS_TEST_TMPDIR/codes")" = 80 ]
	# 40 at once from one address: over its limit, refused (000 or 503), never anything else
	for i in $(seq 1 40); do
		curl -s -o /dev/null --max-time 10 -w '%{http_code}\n' \
			"http://$MHTTP/api/v1/cluster" >>"$BATS_TEST_TMPDIR/burst" &
		pids+=($!)
	done
	wait "${pids[@]}"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/burst")" = 40 ]
	run -1 grep -Ev '^(200|000|503)$' "$BATS_TEST_TMPDIR/burst"
	[ "$(grep -c '^200$' "$BATS_TEST_TMPDIR/burst")" -ge 16 ]
	healthy
}
