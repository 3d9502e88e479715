#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/bench/run.sh -- `make bench`: every benchmark, figures and ratios.
set -eu
O=${O:-.output}
cd "$(dirname "$0")/../.."
for b in "$O"/tests/bench/bench-*; do
	case "$b" in *.o|*.d) continue ;; esac
	[ -x "$b" ] || continue
	echo "== $(basename "$b")"
	"$b"
done
echo "== cluster (master + node + libmooncake on loopback)"
O=$O tests/bench/cluster.sh
echo "== batched get of 128 LOCAL_DISK objects (staged) vs fio on the same file system"
O=$O tests/bench/disk-batch.sh
echo "== durable 4 KiB put/get against Redis both ways"
O=$O tests/bench/durable.sh
echo "== cluster secret (the handshake) vs none"
O=$O tests/bench/auth.sh
echo "== tracer overhead (mooncake-trace attached vs detached)"
O=$O tests/bench/trace-overhead.sh
echo "== oplog=etcd vs oplog=local, and etcd alone (etcdctl check perf)"
O=$O tests/bench/etcd.sh
echo "== the Python binding beside the C client"
O=$O tests/bench/python.sh
