#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# image/build.sh -- build the Mooncake appliance image (`make image`).
#
#   image/build.sh --out DIR --cache DIR [--debs DIR | --no-debs] [--keep-tree]
#   image/build.sh --out DIR --from-tree
#
# A Debian 12 root built by mmdebstrap (no loop device, no mount of the
# image): systemd as PID 1, Debian's kernel, the project's packages from
# --debs, Prometheus, bpftool, and the appliance files of image/rootfs/
# (first-boot setup, role config, run/self-test unit).  The tree becomes
# an ext4 file system with `mkfs.ext4 -d`.  Output in DIR:
#
#   rootfs.img        raw ext4, no partition table (root=/dev/vda)
#   vmlinuz, initrd.img  for qemu's direct kernel boot (image/vm.sh)
#   cmdline           the kernel command line the image expects
#   manifest          the installed packages and their versions
#
# Downloaded .debs are kept in the --cache DIR (and fed back to apt on the
# next build), so a rebuild downloads only what changed.
#
# --keep-tree leaves the root tree in DIR/rootfs; --from-tree then only
# re-applies image/rootfs/ and customize.sh to it and makes the file system
# again (seconds instead of minutes, while working on the appliance files).
#
# Environment: IMAGE_MIRROR (default http://deb.debian.org), IMAGE_SUITE
# (bookworm), IMAGE_EXTRA_PACKAGES (comma-separated, e.g. perftest),
# IMAGE_SIZE (file system size, default: the tree plus 50% and 256M),
# IMAGE_ROOT_PASSWORD (for console logins; the root account is locked
# without it).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out= cache= debs= nodebs=0 keep=0 fromtree=0
usage() { echo "usage: $0 --out DIR --cache DIR (--debs DIR | --no-debs) [--keep-tree] | --out DIR --from-tree" >&2; exit 2; }
while [ $# -gt 0 ]; do
	case "$1" in
	--out) out=$2; shift 2 ;;
	--cache) cache=$2; shift 2 ;;
	--debs) debs=$2; shift 2 ;;
	--no-debs) nodebs=1; shift ;;
	--keep-tree) keep=1; shift ;;
	--from-tree) fromtree=1 keep=1 nodebs=1 cache=-; shift ;;
	*) usage ;;
	esac
done
[ -n "$out" ] && [ -n "$cache" ] || usage
[ -n "$debs" ] || [ "$nodebs" = 1 ] || usage

die() { echo "image: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "building the image needs root (mmdebstrap --mode=root); run as root"
for t in mmdebstrap mkfs.ext4; do
	command -v "$t" >/dev/null || die "$t is missing: apt-get install mmdebstrap e2fsprogs"
done
if [ "$nodebs" = 0 ]; then
	ls "$debs"/*.deb >/dev/null 2>&1 || die "no .deb files in $debs: run 'make deb' first"
fi

mirror=${IMAGE_MIRROR:-http://deb.debian.org}
suite=${IMAGE_SUITE:-bookworm}
# The smallest set that makes a cluster host: systemd + udev as the init,
# Debian's generic kernel (its modules include virtio and soft-RoCE, which
# the cloud flavour lacks), the tools the self-test and operators use,
# Prometheus, and the RDMA user space for `make test-rdma`: the providers
# (rxe, siw), librdmacm, ibv_devinfo, rping and perftest's ib_*_bw (the rdma
# tool is iproute2's).  Not rdma-core (its udev rules and services are not
# needed for soft-RoCE; with it, a node VM's appliance setup once failed
# waiting for its NIC while udev reported a stalled worker).
packages=systemd-sysv,udev,kmod,linux-image-amd64,zstd,iproute2,procps,curl,jq,bpftool,prometheus,ibverbs-providers,librdmacm1,ibverbs-utils,rdmacm-utils,perftest
[ -n "${IMAGE_EXTRA_PACKAGES:-}" ] && packages="$packages,$IMAGE_EXTRA_PACKAGES"

# Leave out what a VM never uses: documentation (copyright files stay),
# translations, the kernel modules of hardware a VM does not have,
# moment-timezone's source data (210 MB; Prometheus' UI loads the bundled
# .min.js) and promtool (46 MB, a development tool).
excludes=('/usr/share/doc/*' '/usr/share/man/*' '/usr/share/info/*' '/usr/share/locale/*'
	  '/usr/share/javascript/moment-timezone/data/*' /usr/bin/promtool)
for d in sound drivers/gpu drivers/media drivers/net/wireless net/wireless net/mac80211 \
	 drivers/bluetooth net/bluetooth drivers/usb drivers/iio drivers/staging drivers/hid \
	 drivers/hwmon drivers/infiniband/hw drivers/isdn drivers/net/can; do
	excludes+=("/lib/modules/*/kernel/$d/*")
done
dpkgopts=()
for e in "${excludes[@]}"; do dpkgopts+=(--dpkgopt="path-exclude=$e"); done
dpkgopts+=(--dpkgopt='path-include=/usr/share/doc/*/copyright'
	  --dpkgopt='path-include=/usr/share/locale/locale.alias')

mkdir -p "$out"
out=$(cd "$out" && pwd)
root=$out/rootfs
rm -f "$out/rootfs.img.tmp"
start=$(date +%s)

if [ "$fromtree" = 1 ]; then
	[ -d "$root/etc" ] || die "$root is not a root tree: build with --keep-tree first"
	"$here/customize.sh" "$root"
else
	mkdir -p "$cache"
	cache=$(cd "$cache" && pwd)
	[ "$nodebs" = 1 ] || debs=$(cd "$debs" && pwd)
	rm -rf "$root"
	hooks=(
		# Reuse the downloaded .debs of earlier builds.
		--skip=essential/unlink
		--setup-hook='mkdir -p "$1/var/cache/apt/archives"'
		--setup-hook="sync-in '$cache' /var/cache/apt/archives"
		# Before the kernel is installed: a small initramfs (virtio only).
		--essential-hook="'$here/initramfs.sh' \"\$1\""
	)
	if [ "$nodebs" = 0 ]; then
		hooks+=(
			--customize-hook='mkdir -p "$1/tmp/mooncake-debs"'
			--customize-hook="sync-in '$debs' /tmp/mooncake-debs"
			--customize-hook='chroot "$1" sh -c "DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends /tmp/mooncake-debs/*.deb && rm -rf /tmp/mooncake-debs"'
		)
	fi
	hooks+=(
		--customize-hook="sync-out /var/cache/apt/archives '$cache'"
		--customize-hook="'$here/customize.sh' \"\$1\""
	)
	# force-unsafe-io: no fsync per unpacked file (a throw-away tree; mkfs
	# writes the image).
	mmdebstrap --mode=root --variant=minbase --include="$packages" \
		--dpkgopt=force-unsafe-io \
		--aptopt='APT::Install-Recommends "false"' \
		"${dpkgopts[@]}" "${hooks[@]}" \
		"$suite" "$root" \
		"deb $mirror/debian $suite main" \
		"deb $mirror/debian $suite-updates main" \
		"deb $mirror/debian-security $suite-security main"
	# Our own packages are not cached: they change with every build.
	rm -f "$cache"/mooncake*.deb "$cache"/libmooncake*.deb "$cache"/lock
	rm -rf "$cache/partial"
fi

# Kernel and initramfs for direct boot (the links Debian's kernel package
# keeps at / point at the newest installed one).
cp -L "$root/vmlinuz" "$out/vmlinuz"
cp -L "$root/initrd.img" "$out/initrd.img"
chroot "$root" dpkg-query -W -f='${Package} ${Version}\n' >"$out/manifest"

# Size: the tree plus half again and 256 MiB for state, logs and Prometheus.
used_k=$(du -sk "$root" | cut -f1)
size=${IMAGE_SIZE:-$(( (used_k * 3 / 2) / 1024 + 256 ))M}
mkfs.ext4 -q -F -L mooncake-root -E root_owner=0:0 -d "$root" "$out/rootfs.img.tmp" "$size"
mv "$out/rootfs.img.tmp" "$out/rootfs.img"
# Quiet: the console shows systemd's errors and what the run unit prints.
# no_timer_check: under TCG on a loaded host the kernel's check of the
# IO-APIC timer can time out and panic ("IO-APIC + timer doesn't work!").
echo "root=/dev/vda rw console=ttyS0 panic=-1 no_timer_check quiet systemd.show_status=error" >"$out/cmdline"
kernel=$(basename "$(readlink -f "$root/vmlinuz")")
[ "$keep" = 1 ] || rm -rf "$root"

echo "image: $out/rootfs.img ($size file system, $(du -k "$out/rootfs.img" | cut -f1) KiB used," \
     "tree $((used_k / 1024)) MiB), $kernel," \
     "built in $(( $(date +%s) - start )) s"
