#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# image/test/rdma.sh OUT [IMAGE_DIR] [--bench] -- `make test-rdma`: the
# RDMA data plane for real, on soft-RoCE (rdma_rxe) between two appliance
# VMs on a private qemu network (image/vm.sh):
#
#   vm1  10.77.0.1  master host: master + this tree's node, RDMA on rxe0
#   vm2  10.77.0.2  client host: this tree's mooncakectl (and client-bench)
#
# The binaries of the tree under test (OUT's bin/ from `make`) go onto
# the VMs' run disk, so an image built from an older tree still tests this
# one.  What each VM does: image/test/rdma/run.  Consoles and results in
# OUT.  --bench also runs the benchmark (out/bench.txt of vm2), its parts
# chosen by RDMA_BENCH_PARTS, FAIR_ROUNDS, FAIR_DEPTH, FAIR_VARIANTS,
# LARGE_ROUNDS, LARGE_COUNT, PUT4_ROUNDS, W4_ROUNDS, W4_VARIANTS,
# W4_IB_TIMEOUTS, PERF_TIMEOUT (image/test/rdma/bench), and RDMA_BENCH_BINS
# (files put into its bin/, e.g. another tree's client-bench);
# RDMA_BENCH_ONLY=1 skips the test steps (a measurement only: not a test).
#
# The VMs' link: RDMA_NET_LINK (image/vm.sh --link), stream by default (one
# Unix stream socket between the two qemus: lossless); mcast is the shared
# UDP multicast segment, which drops frames when the receiving qemu's
# socket buffer is full (soft-RoCE then resends: 60-80% of its packets in
# session 9's runs).  The host's Udp RcvbufErrors before and after are
# printed (they count every UDP socket of the host).
#
# Exit 0 passed, 1 failed, 77 skipped: no image and none can be built
# (not root, no network), or qemu missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: rdma.sh OUT [IMAGE_DIR] [--bench]}
image=${2:-$here/../../.output/image}
bench=0
[ "${3:-}" = --bench ] && bench=1
bin=${MC_BIN:-$here/../../.output/bin}
skip() { echo "test-rdma: SKIPPED: $*"; exit 77; }
for f in rootfs.img vmlinuz initrd.img cmdline; do
	[ -e "$image/$f" ] || skip "no appliance image in $image (make image, as root, with the Debian archive reachable)"
done
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 is missing"
for b in mooncake-master mooncake-node mooncakectl; do
	[ -x "$bin/$b" ] || { echo "test-rdma: $bin/$b is missing: make first"; exit 1; }
done
mkdir -p "$out"
stage=$out/run
rm -rf "$stage" && mkdir -p "$stage/bin"
cp "$here/rdma/run" "$stage/run"
cp "$bin/mooncake-master" "$bin/mooncake-node" "$bin/mooncakectl" "$stage/bin/"
if [ "$bench" = 1 ]; then
	cb=$(dirname "$bin")/tests/bench/client-bench
	[ -x "$cb" ] || { echo "test-rdma: $cb is missing: make test-build"; exit 1; }
	cp "$cb" "$stage/bin/"
	cp "$here/rdma/bench" "$stage/bench"
	# more client-bench builds for the bench's variants (CB=NAME)
	for b in ${RDMA_BENCH_BINS:-}; do cp "$b" "$stage/bin/"; done
	# which parts and how (image/test/rdma/bench)
	for v in RDMA_BENCH_PARTS FAIR_ROUNDS FAIR_DEPTH FAIR_VARIANTS LARGE_ROUNDS LARGE_COUNT PUT4_ROUNDS W4_ROUNDS W4_VARIANTS W4_IB_TIMEOUTS PERF_TIMEOUT RDMA_BENCH_ONLY; do
		[ -n "${!v:-}" ] && echo "$v=${!v}"
	done >"$stage/bench.env"
fi
secret=$(head -c 32 /dev/urandom | base64 | tr -d '\n')
link=${RDMA_NET_LINK:-stream}
rcvbuf_errors() { awk '$1 == "Udp:" { if (!h) { for (i = 2; i <= NF; i++) c[$i] = i; h = 1 } else print $c["RcvbufErrors"] }' /proc/net/snmp; }
rcv0=$(rcvbuf_errors)
start=$(date +%s)
echo "test-rdma: host load at the start: $(uptime)"
echo "test-rdma: link $link; host Udp RcvbufErrors at the start: $rcv0"
"$here/../vm.sh" --image "$image" --out "$out" --timeout "${IMAGE_TEST_TIMEOUT:-2400}" --mem 1536 --link "$link" \
	--vm "name=vm1,role=master,run=$stage,append=mooncake.secret=$secret" \
	--vm "name=vm2,role=node,run=$stage,expect=MOONCAKE-RDMA-OK,append=mooncake.secret=$secret"
rcv1=$(rcvbuf_errors)
echo "test-rdma: passed in $(( $(date +%s) - start )) s"
echo "test-rdma: link $link; host Udp RcvbufErrors at the end: $rcv1 (+$((rcv1 - rcv0)))"
[ "$bench" = 1 ] && [ -e "$out/vm2/out/bench.txt" ] && cp "$out/vm2/out/bench.txt" "$out/bench.txt" &&
	{
		echo "host load at the end: $(uptime)"
		echo "host link $link: Udp RcvbufErrors $rcv0 -> $rcv1 (+$((rcv1 - rcv0)), every UDP socket of the host)"
	} >>"$out/bench.txt" && echo "test-rdma: benchmark in $out/bench.txt"
exit 0
