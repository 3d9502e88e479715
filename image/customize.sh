#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# image/customize.sh ROOT -- mmdebstrap customize hook, run once every
# package is installed: turns the Debian root into the appliance.
#
#   - copies image/rootfs/ (appliance config, setup, run and self-test
#     scripts, their units, Prometheus' config) into ROOT;
#   - ties the packaged units to the appliance: the master runs only on a
#     master host, the node gets its master and data address from
#     mooncake-appliance.service (drop-ins written from the packaged
#     ExecStart, so they follow the packages);
#   - points master.conf at the admin token the first boot writes, and
#     master.conf and node.conf at the cluster secret;
#   - host name, fstab, and the units enabled at boot.
set -euo pipefail
root=$1
here=$(cd "$(dirname "$0")" && pwd)
die() { echo "image: customize: $*" >&2; exit 1; }

# Existing directories keep their owner and mode (e.g. /etc/mooncake).
tar -C "$here/rootfs" --owner=0 --group=0 --numeric-owner -cf - . |
	tar -C "$root" --no-overwrite-dir -xf -

echo mooncake >"$root/etc/hostname"
cat >"$root/etc/hosts" <<'EOF'
127.0.0.1	localhost
127.0.1.1	mooncake
::1		localhost ip6-localhost ip6-loopback
EOF
cat >"$root/etc/fstab" <<'EOF'
# The appliance's root file system (image/build.sh: mkfs.ext4 -L mooncake-root).
LABEL=mooncake-root	/	ext4	rw,noatime	0	1
EOF

# Console logins: the root account stays locked unless a password is given.
if [ -n "${IMAGE_ROOT_PASSWORD:-}" ]; then
	echo "root:$IMAGE_ROOT_PASSWORD" | chroot "$root" chpasswd
fi

# ExecStart of a packaged unit, for the drop-ins below.
exec_start() {
	local f=$root/lib/systemd/system/$1
	[ -e "$f" ] || f=$root/usr/lib/systemd/system/$1
	[ -e "$f" ] || return 1
	sed -n 's/^ExecStart=//p' "$f" | tail -n1
}

if node_exec=$(exec_start mooncake-node.service); then
	[ -n "$node_exec" ] || die "mooncake-node.service has no ExecStart="
	master_exec=$(exec_start mooncake-master.service) || die "mooncake-master.service is not installed"
	exec_start mooncake-trace.service >/dev/null || die "mooncake-trace.service is not installed"

	mkdir -p "$root/etc/systemd/system/mooncake-master.service.d" \
		 "$root/etc/systemd/system/mooncake-node.service.d"
	cat >"$root/etc/systemd/system/mooncake-master.service.d/appliance.conf" <<EOF
# The appliance runs the master on a master host only (ROLE in
# /etc/mooncake/appliance.conf, or mooncake.role= on the kernel command line).
[Unit]
Requires=mooncake-appliance.service
After=mooncake-appliance.service
ConditionPathExists=/run/mooncake-appliance/role-master
EOF
	cat >"$root/etc/systemd/system/mooncake-node.service.d/appliance.conf" <<EOF
# The appliance's node: its master (MASTER in /etc/mooncake/appliance.conf,
# or the local master on a master host) and its data address (ADDRESS), as
# mooncake-appliance.service found them at boot.  Given as flags after the
# packaged command line, so they win over node.conf.
[Unit]
Requires=mooncake-appliance.service
After=mooncake-appliance.service mooncake-master.service

[Service]
EnvironmentFile=/run/mooncake-appliance/node.env
ExecStart=
ExecStart=$node_exec \$MC_APPLIANCE_NODE_ARGS
EOF
	# The daemons read the token and the cluster secret that
	# mooncake-appliance.service writes (set_option FILE KEY VALUE).
	set_option() {
		[ -e "$1" ] || die "$1 is missing"
		if grep -Eq "^[#;[:space:]]*$2[[:space:]]*=" "$1"; then
			sed -i -E "s|^[#;[:space:]]*$2[[:space:]]*=.*|$2 = $3|" "$1"
		else
			printf '\n# The appliance: written at boot by mooncake-appliance.service.\n%s = %s\n' "$2" "$3" >>"$1"
		fi
	}
	set_option "$root/etc/mooncake/master.conf" admin_token_file /etc/mooncake/admin.token
	set_option "$root/etc/mooncake/master.conf" cluster_secret_file /etc/mooncake/cluster.secret
	set_option "$root/etc/mooncake/node.conf" cluster_secret_file /etc/mooncake/cluster.secret
	units="mooncake-master.service mooncake-node.service mooncake-trace.service"
	echo "image: customize: master runs '$master_exec', node runs '$node_exec \$MC_APPLIANCE_NODE_ARGS'"
else
	echo "image: customize: no Mooncake packages installed (--no-debs): the image has no daemons" >&2
	units=
fi

# shellcheck disable=SC2086
chroot "$root" systemctl enable mooncake-appliance.service mooncake-run.service prometheus.service $units
# Nothing updates an appliance behind the operator's back.  e2scrub needs
# LVM, which the appliance has not: its boot-time reaper only costs time
# (minutes under qemu without KVM).
chroot "$root" systemctl disable apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer 2>/dev/null || true
chroot "$root" systemctl mask e2scrub_reap.service
