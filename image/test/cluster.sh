#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# image/test/cluster.sh OUT [IMAGE_DIR] -- the two-VM test (`make
# image-test-cluster`): two appliance VMs on a private qemu network,
#
#   vm1  10.77.0.1  node host, and the client: puts a 4 MiB object with 2
#                   replicas, then is killed (SIGKILL of its qemu)
#   vm2  10.77.0.2  master host (master + node): reads the object after
#                   vm1 is gone, byte-exact, before and after the master
#                   drops vm1's segment
#
# What each VM does: image/test/cluster/run.  Consoles in OUT.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: cluster.sh OUT [IMAGE_DIR]}
image=${2:-$here/../../.output/image}
mkdir -p "$out"
stage=$out/run
rm -rf "$stage" && mkdir -p "$stage"
cp "$here/cluster/run" "$stage/run"
head -c 4194304 /dev/urandom >"$stage/object"
# One cluster secret for both hosts (the node host's connections to vm2's
# master are not loopback: without it the master refuses them).
secret=$(head -c 32 /dev/urandom | base64 | tr -d '\n')
start=$(date +%s)
"$here/../vm.sh" --image "$image" --out "$out" --timeout "${IMAGE_TEST_TIMEOUT:-1800}" \
	--vm "name=vm1,role=node,run=$stage,kill-on=MOONCAKE-CLUSTER-PUT-DONE,append=mooncake.secret=$secret" \
	--vm "name=vm2,role=master,run=$stage,expect=MOONCAKE-CLUSTER-OK,append=mooncake.secret=$secret"
echo "image-test-cluster: passed in $(( $(date +%s) - start )) s"
