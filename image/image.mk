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
#
# image-test and image-test-cluster build the image first only if there is none.
# image/vm.sh boots any number of VMs with a script of your own (see its header).

IMAGE_OUT   ?= $(O)/image
IMAGE_CACHE ?= $(O)/image-cache
IMAGE_TEST_TIMEOUT ?= 1800
# The packages the image installs from $(DEB_OUT): not -dev, not debug symbols.
IMAGE_DEBS = $(filter-out %-dbgsym_%,$(filter-out libmooncake-dev_%,$(notdir $(wildcard $(DEB_OUT)/*.deb))))

.PHONY: image image-test image-test-cluster
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
