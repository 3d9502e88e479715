#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# The attacks of issue 13 on the control plane, on loopback: a client
# without the cluster secret (or with a wrong one), a spoofed
# UNMOUNT_SEGMENT and a fake MOUNT_SEGMENT, a tenant reading and removing
# another tenant's objects over the RPC and over REST.  Each fails on a
# master that trusts what requests declare.
bats_require_minimum_version 1.5.0

load helpers

setup() {
	mc_init
	[ -x "$NODE" ] && [ -x "$CTL" ] && [ -x "$RPC" ] || skip "node, mooncakectl and mc-rpc are needed"
	head -c 32 /dev/urandom | base64 >"$MC_DIR/secret"
	head -c 32 /dev/urandom | base64 >"$MC_DIR/wrong"
	printf 'data-%s\n' "$RANDOM" >"$MC_DIR/data/v"
}

teardown() {
	stop_all
}

# secret_cluster: a master and a node that share the cluster secret.
secret_cluster() {
	start_master --cluster_secret_file="$MC_DIR/secret" "$@"
	start_node n1 --cluster_secret_file="$MC_DIR/secret"
}

@test "without the cluster secret, or with a wrong one, a client is refused; with it, it works" {
	secret_cluster
	run -1 ctl object put k "$MC_DIR/data/v"
	[[ "$output" == *AUTH_FAILED* ]]
	[[ "$output" == *"--secret-file"* ]]
	run -1 ctl --secret-file "$MC_DIR/wrong" object put k "$MC_DIR/data/v"
	[[ "$output" == *AUTH_FAILED* ]]
	# raw frames with no handshake: the connection is closed unanswered
	run -1 "$RPC" "$MASTER_ADDR" hello
	[[ "$output" == *"connection closed"* ]]
	# a peer that claims the secret but proves another is refused by the server
	MC_RPC_SECRET_FILE=$MC_DIR/wrong run -1 "$RPC" "$MASTER_ADDR" hello
	[[ "$output" == *"AUTH_FAILED"* ]]
	# the node's data plane refuses them too
	run -1 "$RPC" "$(node_endpoint n1)" op 0x1003
	[[ "$output" == *"connection closed"* ]]
	# nothing was stored by the refused puts
	run -4 ctl --secret-file "$MC_DIR/secret" object exist k
	# the secret opens both planes; the environment works like the option
	run -0 ctl --secret-file "$MC_DIR/secret" object put k "$MC_DIR/data/v"
	MOONCAKE_CLUSTER_SECRET_FILE=$MC_DIR/secret run -0 "$CTL" --rpc "$MASTER_ADDR" object get k -
	[ "$output" = "$(cat "$MC_DIR/data/v")" ]
	MC_RPC_SECRET_FILE=$MC_DIR/secret run -0 "$RPC" "$MASTER_ADDR" hello
	[[ "$output" == OK* ]]
	# refusals are logged, and rate-limited, and counted
	grep -q 'refused a handshake' "$MC_DIR/master.log"
	run -0 curl -sf "http://$MASTER_HTTP/metrics"
	[[ "$output" =~ mooncake_master_rpc_refused_total\{reason=\"auth\"\}\ [1-9] ]]
}

@test "a secret file that is too short or missing stops the daemon with a clear message" {
	printf 'short\n' >"$MC_DIR/short"
	run -2 "$MASTER" --rpc_port=0 --http_port=0 --state_dir="$MC_DIR/m" \
		--cluster_secret_file="$MC_DIR/short"
	[[ "$output" == *"cluster_secret_file"*"fewer than the 16 needed"*"/dev/urandom"* ]]
	run -1 "$MASTER" --rpc_port=0 --http_port=0 --state_dir="$MC_DIR/m" \
		--cluster_secret_file="$MC_DIR/nope"
	[[ "$output" == *"cannot read cluster_secret_file '$MC_DIR/nope'"* ]]
}

@test "without a secret the master says so loudly when bound to a non-loopback address" {
	MC_MASTER_IP=0.0.0.0 start_master
	grep -q 'NO CLUSTER SECRET.*loopback peers only' "$MC_DIR/master.log"
	# loopback peers still work without any handshake (the single-host mode)
	MASTER_ADDR=127.0.0.1:${MASTER_ADDR##*:}
	run -0 "$RPC" "$MASTER_ADDR" hello
}

# ids: NODE_ID (the node's client id) and SEG_ID (its segment), from REST.
ids() {
	NODE_ID=$(curl -sf "http://$MASTER_HTTP/api/v1/clients" | jq -r '.clients[0].id')
	SEG_ID=$(curl -sf "http://$MASTER_HTTP/api/v1/segments" | jq -r '.segments[0].id')
	[ ${#NODE_ID} = 32 ] && [ ${#SEG_ID} = 32 ]
}

@test "spoofed UNMOUNT_SEGMENT with a node's published client id is refused" {
	command -v jq >/dev/null || skip "jq is needed"
	secret_cluster
	run -0 ctl --secret-file "$MC_DIR/secret" object put k "$MC_DIR/data/v"
	ids
	# without the secret: no connection at all
	run -1 "$RPC" "$MASTER_ADDR" unmount "$NODE_ID" "$SEG_ID"
	# with the secret, but bound to another client id than the one it names
	MC_RPC_SECRET_FILE=$MC_DIR/secret MC_RPC_CLIENT=99 \
		run -0 "$RPC" "$MASTER_ADDR" unmount "$NODE_ID" "$SEG_ID"
	[ "$output" = ILLEGAL_CLIENT ]
	# a connection bound to no client id cannot name one either
	MC_RPC_SECRET_FILE=$MC_DIR/secret run -0 "$RPC" "$MASTER_ADDR" unmount "$NODE_ID" "$SEG_ID"
	[ "$output" = ILLEGAL_CLIENT ]
	# the segment and the object are still there
	[ "$(curl -sf "http://$MASTER_HTTP/api/v1/segments" | jq '.segments | length')" = 1 ]
	run -0 ctl --secret-file "$MC_DIR/secret" object get k -
	[ "$output" = "$(cat "$MC_DIR/data/v")" ]
	grep -q 'refused unmount_segment: it names another client id' "$MC_DIR/master.log"
	[ "$(curl -sf "http://$MASTER_HTTP/metrics" |
		sed -n 's/^mooncake_master_rpc_refused_total{reason="illegal"} //p')" = 2 ]
}

@test "a fake MOUNT_SEGMENT pointing at an attacker's endpoint is refused" {
	command -v jq >/dev/null || skip "jq is needed"
	secret_cluster
	ids
	run -1 "$RPC" "$MASTER_ADDR" mount 7 700 evil 67108864
	MC_RPC_SECRET_FILE=$MC_DIR/wrong run -1 "$RPC" "$MASTER_ADDR" mount 7 700 evil 67108864
	# a member may not mount in the name of the node
	MC_RPC_SECRET_FILE=$MC_DIR/secret MC_RPC_CLIENT=7 \
		run -0 "$RPC" "$MASTER_ADDR" mount "$NODE_ID" 700 evil 67108864
	[ "$output" = ILLEGAL_CLIENT ]
	[ "$(curl -sf "http://$MASTER_HTTP/api/v1/segments" | jq '.segments | length')" = 1 ]
	# puts still land on the real node only
	for i in 1 2 3 4; do
		run -0 ctl --secret-file "$MC_DIR/secret" object put "k$i" "$MC_DIR/data/v"
	done
	run -0 ctl --secret-file "$MC_DIR/secret" object get k4 -
	[ "$output" = "$(cat "$MC_DIR/data/v")" ]
}

# tenant_cluster [node options]: tokens for tenants A and B and an admin; no secret.
tenant_cluster() {
	TA=tok-A-$RANDOM-$RANDOM-$RANDOM TB=tok-B-$RANDOM-$RANDOM-$RANDOM
	TADM=tok-admin-$RANDOM-$RANDOM-$RANDOM
	printf '# tenants\nA %s\nB\t%s\n\n* %s\n' "$TA" "$TB" "$TADM" >"$MC_DIR/tokens"
	chmod 600 "$MC_DIR/tokens"
	printf '%s\n' "$TA" >"$MC_DIR/a.tok"
	printf '%s\n' "$TB" >"$MC_DIR/b.tok"
	printf '%s\n' "$TADM" >"$MC_DIR/admin.tok"
	start_master --tenant_tokens_file="$MC_DIR/tokens" --lease_ttl_ms=200
	start_node n1 "$@"
}

@test "a tenant cannot read, list or remove another tenant's objects over the RPC" {
	tenant_cluster
	run -0 ctl --token-file "$MC_DIR/a.tok" --tenant A object put secret-a "$MC_DIR/data/v"
	# B naming tenant A: refused, whatever the op
	run -1 ctl --token-file "$MC_DIR/b.tok" --tenant A object get secret-a -
	[[ "$output" == *ILLEGAL_CLIENT* ]]
	run -1 ctl --token-file "$MC_DIR/b.tok" --tenant A object stat secret-a
	[[ "$output" == *ILLEGAL_CLIENT* ]]
	run -1 ctl --token-file "$MC_DIR/b.tok" --tenant A object ls
	[[ "$output" == *ILLEGAL_CLIENT* ]]
	run -1 ctl --token-file "$MC_DIR/b.tok" --tenant A object rm --force secret-a
	[[ "$output" == *ILLEGAL_CLIENT* ]]
	# no token at all: only the default tenant
	run -1 ctl --tenant A object get secret-a -
	[[ "$output" == *ILLEGAL_CLIENT* ]]
	run -0 ctl object put plain "$MC_DIR/data/v"
	# B's own namespace (its token and no --tenant) does not hold A's key
	run -4 ctl --token-file "$MC_DIR/b.tok" object exist secret-a
	# an unknown token is refused at the handshake
	printf 'tok-nobody-%s-%s\n' "$RANDOM" "$RANDOM" >"$MC_DIR/x.tok"
	run -1 ctl --token-file "$MC_DIR/x.tok" object exist plain
	[[ "$output" == *AUTH_FAILED* ]]
	# A itself (its tenant named, or implied) and the admin reach it
	run -0 ctl --token-file "$MC_DIR/a.tok" --tenant A object get secret-a -
	[ "$output" = "$(cat "$MC_DIR/data/v")" ]
	run -0 ctl --token-file "$MC_DIR/a.tok" object exist secret-a
	run -0 ctl --token-file "$MC_DIR/admin.tok" --tenant A object get secret-a -
	[ "$output" = "$(cat "$MC_DIR/data/v")" ]
	sleep 0.3	# the reads' leases
	run -0 ctl --token-file "$MC_DIR/admin.tok" --tenant A object rm secret-a
	run -4 ctl --token-file "$MC_DIR/a.tok" object exist secret-a
}

@test "a tenant bound by its token puts through the node, ended or relayed, into its own namespace" {
	tenant_cluster --segment_size=128M	# room for every live object of the loads
	mkdir -p "$MC_DIR/load"
	export MC_DISABLE_SHM=1			# TCP: puts ended by the node too
	export MOONCAKE_TOKEN_FILE="$MC_DIR/a.tok"	# no tenant named: the token's
	MC_PUT_RELAY=1 run -0 "$O/tests/tools/mc-load" run "$MASTER_ADDR" "$MC_DIR/load" 2 4 200
	MC_PUT_RELAY=0 MC_PUT_NODE_END=1 run -0 "$O/tests/tools/mc-load" run "$MASTER_ADDR" \
		"$MC_DIR/load" 1 4 200
	verify_load
	unset MOONCAKE_TOKEN_FILE
	[ "$(node_metric n1 mooncake_node_put_relays_total)" -gt 0 ]
	[ "$(node_metric n1 mooncake_node_put_ends_total)" -gt 0 ]
	[ "$(node_metric n1 mooncake_node_put_ends_failed_total)" = 0 ]
	# a key acknowledged and never sent a remove (the load removes at random)
	key=$(awk '$1 == "P" { live[$2] = 1 } $1 == "r" { delete live[$2] }
		END { for (k in live) { print k; exit } }' "$MC_DIR"/load/journal-*)
	[ -n "$key" ]
	run -0 ctl --token-file "$MC_DIR/a.tok" object exist "$key"
	run -4 ctl --token-file "$MC_DIR/b.tok" object exist "$key"
	run -4 ctl object exist "$key"
}

@test "with tenant tokens, REST reads need a token and a tenant's token reaches its tenant only" {
	command -v curl >/dev/null && command -v jq >/dev/null || skip "curl and jq are needed"
	tenant_cluster
	run -0 ctl --token-file "$MC_DIR/a.tok" --tenant A object put secret-a "$MC_DIR/data/v"
	local u=http://$MASTER_HTTP/api/v1
	code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
	[ "$(code "$u/objects?tenant=A")" = 401 ]
	[ "$(code "$u/objects/secret-a?tenant=A")" = 401 ]
	[ "$(code "$u/cluster")" = 401 ]
	[ "$(code -H "Authorization: Bearer $TB" "$u/objects?tenant=A")" = 403 ]
	[ "$(code -H "Authorization: Bearer $TB" "$u/objects/secret-a?tenant=A")" = 403 ]
	[ "$(code -X DELETE -H "Authorization: Bearer $TB" "$u/objects/secret-a?tenant=A&force=true")" = 403 ]
	[ "$(code -H "Authorization: Bearer $TB" "$u/segments")" = 403 ]
	[ "$(code -H "Authorization: Bearer $TB" "$u/tenants")" = 403 ]
	[ "$(code -H "Authorization: Bearer nope-nope-nope-nope" "$u/objects?tenant=A")" = 401 ]
	# the owner and the admin
	run -0 curl -sf -H "Authorization: Bearer $TA" "$u/objects?tenant=A"
	[ "$(jq -r '.objects[0].key' <<<"$output")" = secret-a ]
	[ "$(code -H "Authorization: Bearer $TA" "$u/tenants/A/quota")" = 200 ]
	[ "$(code -H "Authorization: Bearer $TA" "$u/tenants/B/quota")" = 403 ]
	[ "$(code -H "Authorization: Bearer $TADM" "$u/segments")" = 200 ]
	[ "$(code -H "Authorization: Bearer $TADM" "$u/objects/secret-a?tenant=A")" = 200 ]
	# /health and /metrics stay open
	[ "$(code "http://$MASTER_HTTP/health")" = 200 ]
	[ "$(code "http://$MASTER_HTTP/metrics")" = 200 ]
	# still there after B's attempts
	run -0 ctl --token-file "$MC_DIR/a.tok" --tenant A object exist secret-a
}

@test "a bad tenant_tokens_file stops the master and names the line" {
	printf 'A tok-A-long-enough-1234\nB tok-A-long-enough-1234\n' >"$MC_DIR/dup"
	run -2 "$MASTER" --rpc_port=0 --http_port=0 --state_dir="$MC_DIR/m" --tenant_tokens_file="$MC_DIR/dup"
	[[ "$output" == *"dup:2: the same token is on an earlier line"* ]]
	printf 'A short\n' >"$MC_DIR/short"
	run -2 "$MASTER" --rpc_port=0 --http_port=0 --state_dir="$MC_DIR/m" --tenant_tokens_file="$MC_DIR/short"
	[[ "$output" == *"short:1: token of 5 bytes"* ]]
	printf 'A\n' >"$MC_DIR/one"
	run -2 "$MASTER" --rpc_port=0 --http_port=0 --state_dir="$MC_DIR/m" --tenant_tokens_file="$MC_DIR/one"
	[[ "$output" == *"one:1: expected 'TENANT TOKEN'"* ]]
}
