#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# DISK and DFS replicas: files under the master's shared_root that clients
# write and read directly (daemon/master/fsroot.c, meta-fs.c,
# lib/client/client-disk.c).  Each mooncakectl call is a client of its own,
# so every read here is another client's than the write.
bats_require_minimum_version 1.5.0

load helpers

setup() {
	mc_init
	[ -x "$CTL" ] || skip "mooncakectl not built"
	SR=$MC_DIR/shared
}

teardown() {
	stop_all
}

# The master of these tests: short leases and grants, so that deletions
# (after the readers' leases) come within a second or two.
start_fs_master() {
	start_master --shared_root="$SR" --lease_ttl_ms=300 --write_grant_ttl_ms=100 \
		--dfs_file_size=1M --dfs_files=4 "$@"
}

# disk_files: the complete DISK files under the root (no temp files).
disk_files() { find "$SR/disk" -type f ! -name '*.tmp' | sort; }

# wait_gone FILE: the master deletes it within 10 s.
wait_gone() {
	local i
	for i in $(seq 1 100); do
		[ -e "$1" ] || return 0
		sleep 0.1
	done
	echo "# $1 still there" >&2
	return 1
}

@test "a master without shared_root refuses DISK and DFS replicas, clearly" {
	start_master
	head -c 1000 /dev/urandom >"$MC_DIR/v"
	run ctl object put k "$MC_DIR/v" --replicas 0 --disk-replicas 1
	[ "$status" -ne 0 ]
	[[ "$output" == *"shared_root"* ]]
	run ctl object put k "$MC_DIR/v" --replicas 0 --dfs-replicas 1
	[ "$status" -ne 0 ]
	run ctl object put k "$MC_DIR/v" --replicas 0
	[ "$status" -ne 0 ]
}

@test "DISK and DFS replicas read by another client from the shared directory, byte for byte" {
	start_fs_master
	start_node n1
	# memory + DISK + DFS; DISK only and DFS only (no node needed for them)
	run -0 put_random both 300K --disk-replicas 1 --dfs-replicas 1
	run -0 put_random disk1 1M --replicas 0 --disk-replicas 1
	run -0 put_random dfs1 5000 --replicas 0 --dfs-replicas 1
	run -0 put_random 'odd key/../%x y' 7000 --replicas 0 --disk-replicas 1
	[ "$(tier_of both)" = "memory,disk,dfs" ]
	[ "$(tier_of disk1)" = "disk" ]
	[ "$(tier_of dfs1)" = "dfs" ]
	for k in both disk1 dfs1 'odd key/../%x y'; do get_compare "$k"; done
	# the files: DISK ones whole, under disk/<tenant>/, names safe
	[ "$(disk_files | wc -l)" -eq 3 ]
	disk_files | grep -q "^$SR/disk/default/[0-9a-f][0-9a-f]/[0-9a-f][0-9a-f]/odd%20key%2F..%2F%25x%20y+[0-9a-f]\{12\}$"
	f=$(ctl --json object stat disk1 | jq -r '.replicas[0].endpoint')
	cmp "$f" "$(_mc_file disk1)"
	# DFS: a page-aligned range of a shard file
	d=$(ctl --json object stat dfs1 | jq -r '.replicas[0] | "\(.endpoint) \(.offset)"')
	[ "${d%% *}" = "$SR/dfs/00000.dfs" ] || [[ "${d%% *}" == "$SR"/dfs/0000[0-3].dfs ]]
	[ $((${d##* } % 4096)) -eq 0 ]
	cmp <(tail -c +$((${d##* } + 1)) "${d%% *}" | head -c 5000) "$(_mc_file dfs1)"
	# REST shows each replica's tier
	curl -sf "http://$MASTER_HTTP/api/v1/objects/both" | jq -e '[.replicas[].type] == ["memory","disk","dfs"]'
	curl -sf "http://$MASTER_HTTP/api/v1/objects/dfs1" | jq -e '.replicas[0].shard >= 0'
	# without its node, the object still reads from its files
	kill_node n1
	get_compare both
}

@test "a damaged file is refused by its checksum; the next replica serves" {
	start_fs_master
	run -0 put_random k 200K --replicas 0 --disk-replicas 1 --dfs-replicas 1
	f=$(disk_files)
	printf 'garbage' | dd of="$f" bs=1 seek=1000 conv=notrunc 2>/dev/null
	get_compare k   # from the DFS range
	run -0 put_random k2 200K --replicas 0 --disk-replicas 1
	f=$(disk_files | grep 'k2+')
	printf 'garbage' | dd of="$f" bs=1 seek=1000 conv=notrunc 2>/dev/null
	run ctl object get k2 "$MC_DIR/k2.out"
	[ "$status" -ne 0 ]
	[[ "$output" == *"checksum"* ]]
}

@test "remove and overwrite delete the old DISK file and give the DFS range back" {
	start_fs_master
	run -0 put_random a 100K --replicas 0 --disk-replicas 1 --dfs-replicas 1
	f=$(disk_files)
	[ -f "$f" ]
	run -0 ctl object rm a --force
	wait_gone "$f"
	# the range is reused by the next DFS put (the allocator took it back)
	d0=$(du -k "$SR/dfs/00000.dfs" | cut -f1)
	run -0 put_random b 100K --replicas 0 --dfs-replicas 1
	[ "$(ctl --json object stat b | jq -r '.replicas[0].offset')" -eq 0 ]
	get_compare b
	[ "$d0" -le 4 ]   # punched out of the shard file
	# an overwrite writes a new file (a new generation); the old one goes
	run -0 put_random c 50K --replicas 0 --disk-replicas 1
	f=$(disk_files)
	run -0 put_random c 60K --replicas 0 --disk-replicas 1 --overwrite
	get_compare c
	wait_gone "$f"
	[ "$(disk_files | wc -l)" -eq 1 ]
	cmp "$(disk_files)" "$(_mc_file c)"
}

@test "a master restart (oplog, then snapshot) keeps DISK and DFS replicas" {
	start_fs_master --rpc_port="$(free_port)" --snapshot_interval_s=0
	run -0 put_random a 100K --replicas 0 --disk-replicas 1 --dfs-replicas 1
	run -0 put_random b 9000 --replicas 0 --dfs-replicas 1
	run -0 put_random c 5000 --replicas 0 --disk-replicas 1
	run -0 ctl object rm c --force
	restart_master --shared_root="$SR" --lease_ttl_ms=300 --write_grant_ttl_ms=100 \
		--dfs_file_size=1M --dfs_files=4 --snapshot_interval_s=0
	get_compare a
	get_compare b
	run ctl object get c "$MC_DIR/c.out"
	[ "$status" -ne 0 ]
	[ "$(tier_of a)" = "disk,dfs" ]
	# from a snapshot alone (the oplog after it is empty)
	run -0 ctl snapshot create
	restart_master --shared_root="$SR" --lease_ttl_ms=300 --write_grant_ttl_ms=100 \
		--dfs_file_size=1M --dfs_files=4 --snapshot_interval_s=0
	get_compare a
	get_compare b
	# the restored DFS ranges stay taken: new puts do not overwrite them
	for i in 1 2 3 4; do run -0 put_random "n$i" 20000 --replicas 0 --dfs-replicas 1; done
	get_compare a
	get_compare b
	for i in 1 2 3 4; do get_compare "n$i"; done
}

@test "kill -9 of a writer mid-write: no reader sees a torn object, its temp file goes" {
	start_fs_master --put_discard_timeout_ms=500 --put_release_timeout_ms=1000
	head -c 600K /dev/urandom >"$MC_DIR/big"
	MC_TEST_FS_WRITE_DELAY_MS=60000 "$CTL" --rpc "$MASTER_ADDR" object put big "$MC_DIR/big" \
		--replicas 0 --disk-replicas 1 --dfs-replicas 1 >/dev/null 2>&1 &
	local w=$! i
	echo "$w writer" >>"$MC_DIR/pids"
	for i in $(seq 1 100); do
		[ -n "$(find "$SR/disk" -name '*.tmp' 2>/dev/null)" ] && break
		sleep 0.1
	done
	t=$(find "$SR/disk" -name '*.tmp')
	[ -n "$t" ]
	kill -KILL "$w"
	wait "$w" || true
	# half written: the final name does not exist, the object is not readable
	[ -z "$(disk_files)" ]
	run ctl object get big "$MC_DIR/big.out"
	[ "$status" -ne 0 ]
	[ ! -s "$MC_DIR/big.out" ] || ! cmp -s "$MC_DIR/big.out" "$MC_DIR/big"
	# the put is taken over after put_discard_timeout_ms, and written whole
	for i in $(seq 1 50); do
		ctl object put big "$MC_DIR/big" --replicas 0 --disk-replicas 1 --dfs-replicas 1 \
			>/dev/null 2>&1 && break
		sleep 0.1
	done
	ctl object get big "$MC_DIR/big.out"
	cmp "$MC_DIR/big.out" "$MC_DIR/big"
	# the dead writer's temp file is deleted (its put reaped)
	wait_gone "$t"
	[ "$(disk_files | wc -l)" -eq 1 ]
}

@test "temp files of dead writers older than put_release_timeout_ms go at the master's start" {
	mkdir -p "$SR/disk/default/00/00"
	: >"$SR/disk/default/00/00/old+000000000001.tmp"
	: >"$SR/disk/default/00/00/new+000000000002.tmp"
	: >"$SR/disk/default/00/00/kept+000000000003"
	touch -d '-2 hours' "$SR/disk/default/00/00/old+000000000001.tmp" \
		"$SR/disk/default/00/00/kept+000000000003"
	start_fs_master --put_release_timeout_ms=3600000
	[ ! -e "$SR/disk/default/00/00/old+000000000001.tmp" ]
	[ -e "$SR/disk/default/00/00/new+000000000002.tmp" ]
	[ -e "$SR/disk/default/00/00/kept+000000000003" ]
	grep -q 'deleted 1 temp files' "$MC_DIR/master.log"
}
