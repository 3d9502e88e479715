#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# image/initramfs.sh ROOT -- mmdebstrap essential hook, run before the
# kernel package is installed: makes its initramfs small.  The appliance
# boots from a virtio disk only, so the initramfs carries the virtio and
# ext4 modules and nothing else (MODULES=list), instead of every storage driver
# (MODULES=most): a smaller file that unpacks faster, which counts under
# qemu without KVM.
set -eu
root=$1
mkdir -p "$root/etc/initramfs-tools/conf.d" "$root/etc/initramfs-tools/hooks"
cat >"$root/etc/initramfs-tools/conf.d/mooncake-appliance.conf" <<'CONF'
# The appliance boots from virtio only: see hooks/mooncake-appliance.
MODULES=list
CONF
cat >"$root/etc/initramfs-tools/hooks/mooncake-appliance" <<'HOOK'
#!/bin/sh
# Adds and loads the drivers of the appliance's root disk: virtio, ext4.
case "$1" in prereqs) exit 0 ;; esac
. /usr/share/initramfs-tools/hook-functions
for m in virtio_pci virtio_blk ext4; do
	manual_add_modules "$m"
	echo "$m" >>"$DESTDIR/conf/modules"
done
HOOK
chmod 0755 "$root/etc/initramfs-tools/hooks/mooncake-appliance"
