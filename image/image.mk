# SPDX-License-Identifier: Apache-2.0
# image/ -- the appliance image; none of this is part of `make test` (root,
# network to the Debian archive, minutes of qemu):
#
#   make image               $(IMAGE_OUT)/{rootfs.img,vmlinuz,initrd.img}: Debian 12 with
#                            the packages of `make deb` (image/build.sh); downloaded
#                            .debs are kept in $(IMAGE_CACHE) for the next build
#   make image-test          boots it (qemu, KVM or TCG) and runs the self-test
#   make image-test-cluster  two VMs: a node host puts an object with 2 replicas and
#                            is killed; the master host still reads it
#   make test-rdma           two VMs on soft-RoCE (rxe): the RDMA data plane of this
#                            tree's binaries, byte-exact 1 B..64 MiB, a TCP client
#                            beside it (image/test/rdma.sh); skips without an image
#   make bench-rdma          the same, then put/get GB/s and 4 KiB latency over RDMA
#                            and TCP against ib_write_bw / ib_read_bw on that link
#
# image-test and image-test-cluster build the image first only if there is none.
# image/vm.sh boots any number of VMs with a script of your own (see its header).

IMAGE_OUT   ?= $(O)/image
IMAGE_CACHE ?= $(O)/image-cache
IMAGE_TEST_TIMEOUT ?= 1800
# test-rdma and bench-rdma: soft-RoCE under TCG moves about 1 MiB/s
RDMA_TEST_TIMEOUT ?= 3600
# The packages the image installs from $(DEB_OUT): not -dev, not debug symbols.
IMAGE_DEBS = $(filter-out %-dbgsym_%,$(filter-out libmooncake-dev_%,$(notdir $(wildcard $(DEB_OUT)/*.deb))))

.PHONY: image image-test image-test-cluster test-rdma bench-rdma
image: deb
	$(Q)packaging/deps.sh image
	$(call msg,IMAGE,$(IMAGE_OUT))
	$(Q)rm -rf $(IMAGE_OUT).debs && mkdir -p $(IMAGE_OUT).debs
	$(Q)cd $(DEB_OUT) && cp $(IMAGE_DEBS) $(abspath $(IMAGE_OUT)).debs/
	$(Q)image/build.sh --out $(IMAGE_OUT) --cache $(IMAGE_CACHE) --debs $(IMAGE_OUT).debs \
		$(if $(V),,>$(IMAGE_OUT).log 2>&1) || \
		{ tail -n 40 $(IMAGE_OUT).log; echo "image: the build failed; whole log: $(IMAGE_OUT).log"; exit 1; }
	$(Q)rm -rf $(IMAGE_OUT).debs
	$(Q)tail -n 1 $(IMAGE_OUT).log 2>/dev/null || true

$(IMAGE_OUT)/rootfs.img:
	$(Q)$(MAKE) --no-print-directory image

image-test: $(IMAGE_OUT)/rootfs.img
	$(Q)packaging/deps.sh image
	$(call msg,VM,self-test)
	$(Q)image/vm.sh --image $(IMAGE_OUT) --out $(O)/image-test --timeout $(IMAGE_TEST_TIMEOUT) \
		--vm name=selftest,run=selftest,expect=MOONCAKE-SELFTEST-OK

image-test-cluster: $(IMAGE_OUT)/rootfs.img
	$(Q)packaging/deps.sh image
	$(call msg,VM,two-VM test)
	$(Q)IMAGE_TEST_TIMEOUT=$(IMAGE_TEST_TIMEOUT) image/test/cluster.sh $(O)/image-test-cluster $(IMAGE_OUT)

# Skips (exit 77 -> a message, success) when no image exists and none can be
# built here; `make image` first where it can.
test-rdma: all
	$(call msg,VM,RDMA test)
	$(Q)IMAGE_TEST_TIMEOUT=$(RDMA_TEST_TIMEOUT) image/test/rdma.sh $(O)/test-rdma $(IMAGE_OUT); \
		r=$$?; [ $$r = 77 ] && exit 0; exit $$r

bench-rdma: all $(O)/tests/bench/client-bench
	$(call msg,VM,RDMA benchmark)
	$(Q)IMAGE_TEST_TIMEOUT=$(RDMA_TEST_TIMEOUT) image/test/rdma.sh $(O)/bench-rdma $(IMAGE_OUT) --bench; \
		r=$$?; [ $$r = 77 ] && exit 0; exit $$r
