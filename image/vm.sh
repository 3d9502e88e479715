#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# image/vm.sh -- boot appliance VMs under qemu, run something in each,
# collect what they print, and say whether each one passed.
#
#   image/vm.sh [--image DIR] [--out DIR] [--timeout S] [--mem MIB] [--smp N]
#               [--net] [--link mcast|stream] --vm SPEC [--vm SPEC ...]
#
# Every VM boots the same image (image/build.sh's rootfs.img, vmlinuz,
# initrd.img; writes go to a throw-away overlay, so each boot is a first
# boot) with qemu's direct kernel boot: KVM when /dev/kvm is usable, TCG
# otherwise.  With more than one VM (or --net) they share a private
# Ethernet segment; VM i has address 10.77.0.i/24.  The segment (--link):
#   mcast   (default) a qemu socket network on a random multicast group of
#           127.0.0.1 that nothing else joins; any number of VMs.  Lossy:
#           a frame that finds the receiving qemu's UDP buffer full
#           (net.core.rmem_default, 208 KiB on Debian) is dropped (the
#           host's Udp RcvbufErrors), so bursts cost TCP and RDMA resends;
#   stream  exactly two VMs joined by one Unix stream socket (qemu's
#           -netdev stream: the first VM listens, the second connects once
#           the socket is there); lossless: a full socket holds the sender
#           back instead of dropping.
#
# SPEC is key=value pairs separated by commas:
#   name=NAME       console log NAME.console in --out (default vmI)
#   role=ROLE       master or node (default: master for the first VM, node
#                   for the others)
#   address=CIDR    its cluster address (default 10.77.0.I/24 when networked)
#   master=H:P      a node's master (default: the first master VM, :50051)
#   run=WHAT        selftest: the image's self-test; a directory: copied
#                   onto the VM's run disk and its `run` executed there
#                   (mooncake.run=disk).  Default selftest.
#   expect=TEXT     the VM passes if TEXT shows on its console before it
#                   powers off (default "MOONCAKE-RUN-END rc=0")
#   kill-on=TEXT    SIGKILL the VM (pulling its plug) once TEXT shows on its
#                   console; it then passes if TEXT showed
#   append=ARG      one more kernel command-line argument (repeatable)
#   keep=1          do not power off at the end (debugging; needs --timeout)
#
# The run disk also holds vm.env (NAME, ROLE, ADDRESS, MASTER, INDEX and
# PEERS="name=ip ...") for the run script.  What a run script writes under
# out/ on its disk is copied to --out/NAME/ after the VM stops.
# Exit: 0 when every VM passed, 1 otherwise, 2 on a usage error.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
image=${IMAGE_DIR:-$here/../.output/image}
out= timeout=1200 mem=1024 smp=2 net=0 link=mcast specs=()
usage() { sed -n '4,44p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
	case "$1" in
	--image) image=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--smp) smp=$2; shift 2 ;;
	--net) net=1; shift ;;
	--link) link=$2; shift 2 ;;
	--vm) specs+=("$2"); shift 2 ;;
	-h | --help) usage ;;
	*) echo "vm.sh: unknown argument $1" >&2; usage ;;
	esac
done
[ ${#specs[@]} -ge 1 ] || usage
die() { echo "vm.sh: $*" >&2; exit 1; }
for f in rootfs.img vmlinuz initrd.img cmdline; do
	[ -e "$image/$f" ] || die "$image/$f is missing: run 'make image' first"
done
for t in qemu-system-x86_64 mkfs.ext4 debugfs; do
	command -v "$t" >/dev/null || die "$t is missing: apt-get install qemu-system-x86 e2fsprogs"
done
[ -n "$out" ] || out=$(mktemp -d /tmp/mooncake-vm.XXXXXX)
mkdir -p "$out"
out=$(cd "$out" && pwd)

# KVM when this process may use it, TCG otherwise.
if [ -e /dev/kvm ] && { exec 3<>/dev/kvm; } 2>/dev/null; then
	exec 3>&-
	accel=(-accel kvm -cpu host)
	accel_name=kvm
else
	accel=(-accel tcg -cpu max)
	accel_name=tcg
fi

n=${#specs[@]}
[ "$n" -gt 1 ] && net=1
[ "$n" -le 200 ] || die "at most 200 VMs"
case "$link" in
mcast) ;;
stream) [ "$n" = 2 ] || die "--link stream joins exactly two VMs, not $n" ;;
*) die "--link $link: mcast or stream" ;;
esac
declare -a name role address master run expect killon append keep
first_master=
for i in $(seq 1 "$n"); do
	name[i]=vm$i role[i]= address[i]= master[i]= run[i]=selftest expect[i]="MOONCAKE-RUN-END rc=0"
	killon[i]= append[i]= keep[i]=0
	IFS=, read -r -a kv <<<"${specs[i - 1]}"
	for p in "${kv[@]}"; do
		k=${p%%=*} v=${p#*=}
		[ "$k" != "$p" ] || die "--vm ${specs[i - 1]}: '$p' is not key=value"
		case "$k" in
		name) [[ "$v" =~ ^[A-Za-z0-9][A-Za-z0-9-]*$ ]] || die "name=$v: letters, digits and '-' only"; name[i]=$v ;;
		role) [ "$v" = master ] || [ "$v" = node ] || die "role=$v: master or node"; role[i]=$v ;;
		address) address[i]=$v ;;
		master) master[i]=$v ;;
		run) run[i]=$v ;;
		expect) expect[i]=$v ;;
		kill-on) killon[i]=$v ;;
		append) append[i]="${append[i]} $v" ;;
		keep) keep[i]=$v ;;
		*) die "--vm: unknown key $k (name, role, address, master, run, expect, kill-on, append, keep)" ;;
		esac
	done
	[ -n "${role[i]}" ] || { [ "$i" = 1 ] && role[i]=master || role[i]=node; }
	[ "$net" = 1 ] && [ -z "${address[i]}" ] && address[i]=10.77.0.$i/24
	[ "${role[i]}" = master ] && [ -z "$first_master" ] && first_master=${address[i]%/*}
done
peers=
for i in $(seq 1 "$n"); do
	if [ "${role[i]}" = node ] && [ -z "${master[i]}" ]; then
		[ -n "$first_master" ] || die "${name[i]}: a node needs master= (no VM is a master with an address)"
		master[i]=$first_master:50051
	fi
	peers="$peers ${name[i]}=${address[i]%/*}"
done

# A multicast group and port of our own: concurrent runs never share a
# network.  --link stream: a socket of our own (a short path: sun_path holds
# 107 bytes).
group=239.255.$((RANDOM % 250 + 1)).$((RANDOM % 250 + 1)):$((RANDOM % 30000 + 20000))
sockdir=
[ "$link" = stream ] && sockdir=$(mktemp -d /tmp/mc-vmnet.XXXXXX)

pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	[ -z "$sockdir" ] || rm -rf "$sockdir"
}
trap cleanup EXIT INT TERM

base_cmdline=$(cat "$image/cmdline")
start=$(date +%s)
for i in $(seq 1 "$n"); do
	nm=${name[i]}
	console=$out/$nm.console
	: >"$console"
	cmd="$base_cmdline mooncake.role=${role[i]}"
	[ -n "${address[i]}" ] && cmd="$cmd mooncake.address=${address[i]} mooncake.name=$nm"
	[ -n "${master[i]}" ] && cmd="$cmd mooncake.master=${master[i]}"
	[ "${keep[i]}" = 1 ] && cmd="$cmd mooncake.run.keep=1"
	drives=(-drive "file=$image/rootfs.img,format=raw,if=virtio,snapshot=on")
	if [ "${run[i]}" = selftest ]; then
		cmd="$cmd mooncake.run=selftest"
	else
		[ -x "${run[i]}/run" ] || die "${nm}: run=${run[i]}: no executable 'run' in that directory"
		stage=$out/$nm.stage
		rm -rf "$stage" && mkdir -p "$stage"
		cp -a "${run[i]}/." "$stage/"
		cat >"$stage/vm.env" <<-EOF
			NAME=$nm
			INDEX=$i
			ROLE=${role[i]}
			ADDRESS=${address[i]}
			MASTER=${master[i]}
			PEERS="${peers# }"
		EOF
		size_k=$(du -sk "$stage" | cut -f1)
		mkfs.ext4 -q -F -L mcrun -E root_owner=0:0 -d "$stage" "$out/$nm.run.img" "$((size_k / 1024 + 64))M" >/dev/null
		rm -rf "$stage"
		drives+=(-drive "file=$out/$nm.run.img,format=raw,if=virtio")
		cmd="$cmd mooncake.run=disk"
	fi
	cmd="$cmd${append[i]}"
	nic=(-nic none)
	if [ "$net" = 1 ] && [ "$link" = stream ]; then
		# the first VM listens; the second connects (qemu 7.2 does not
		# retry a refused connect), so it starts once the first listens
		srv=off
		[ "$i" = 1 ] && srv=on
		if [ "$i" = 2 ]; then
			for _ in $(seq 1 100); do
				[ -S "$sockdir/link" ] && break
				kill -0 "${pids[1]}" 2>/dev/null || break
				sleep 0.2
			done
			[ -S "$sockdir/link" ] || die "${name[1]}'s qemu did not listen on $sockdir/link: $(tail -n 5 "$out/${name[1]}.qemu.log")"
			sleep 0.5	# (bound, then listening)
		fi
		nic=(-netdev "stream,id=n0,server=$srv,addr.type=unix,addr.path=$sockdir/link"
		     -device "virtio-net-pci,netdev=n0,mac=52:54:00:77:00:$(printf %02x "$i")")
	elif [ "$net" = 1 ]; then
		nic=(-netdev "socket,id=n0,mcast=$group,localaddr=127.0.0.1"
		     -device "virtio-net-pci,netdev=n0,mac=52:54:00:77:00:$(printf %02x "$i")")
	fi
	echo "vm.sh: $nm: ${role[i]} ${address[i]:-(no network)} ${master[i]:+master ${master[i]}} run=${run[i]} ($accel_name${address[i]:+, link $link})"
	TMPDIR=$out qemu-system-x86_64 -nodefaults -machine q35 "${accel[@]}" -smp "$smp" -m "$mem" \
		-display none -no-reboot -serial "file:$console" \
		-kernel "$image/vmlinuz" -initrd "$image/initrd.img" -append "$cmd" \
		"${drives[@]}" "${nic[@]}" -device virtio-rng-pci \
		>"$out/$nm.qemu.log" 2>&1 &
	pids[i]=$!
done

# Watch: kill-on markers, exits, the deadline.
declare -a state done_at booted_at
for i in $(seq 1 "$n"); do state[i]=running; done
while :; do
	left=0
	now=$(date +%s)
	for i in $(seq 1 "$n"); do
		[ "${state[i]}" = running ] || continue
		console=$out/${name[i]}.console
		if [ -z "${booted_at[i]:-}" ] && grep -q MOONCAKE-RUN-BOOTED "$console"; then
			booted_at[i]=$((now - start))
		fi
		if [ -n "${killon[i]}" ] && grep -qF -- "${killon[i]}" "$console"; then
			kill -9 "${pids[i]}" 2>/dev/null || true
			wait "${pids[i]}" 2>/dev/null || true
			state[i]=killed done_at[i]=$((now - start))
			echo "vm.sh: ${name[i]}: killed (SIGKILL) at $((now - start)) s, after \"${killon[i]}\""
			continue
		fi
		if ! kill -0 "${pids[i]}" 2>/dev/null; then
			wait "${pids[i]}" 2>/dev/null && rc=0 || rc=$?
			state[i]=exited done_at[i]=$((now - start))
			echo "vm.sh: ${name[i]}: powered off at $((now - start)) s (qemu rc $rc)"
			continue
		fi
		left=$((left + 1))
	done
	[ "$left" -gt 0 ] || break
	if [ $((now - start)) -ge "$timeout" ]; then
		for i in $(seq 1 "$n"); do
			[ "${state[i]}" = running ] || continue
			kill -9 "${pids[i]}" 2>/dev/null || true
			state[i]=timeout done_at[i]=$((now - start))
			echo "vm.sh: ${name[i]}: still running after $timeout s: killed"
		done
		break
	fi
	sleep 1
done

# Results.
fail=0
for i in $(seq 1 "$n"); do
	nm=${name[i]}
	console=$out/$nm.console
	if [ -e "$out/$nm.run.img" ]; then
		rm -rf "${out:?}/$nm"
		mkdir -p "$out/$nm"
		debugfs -R "rdump /out $out/$nm" "$out/$nm.run.img" >/dev/null 2>&1 || true
		rm -f "$out/$nm.run.img"
	fi
	case "${state[i]}" in
	killed) ok=1 ;;
	exited) grep -qF -- "${expect[i]}" "$console" && ok=1 || ok=0 ;;
	*) ok=0 ;;
	esac
	verdict=PASS
	[ "$ok" = 1 ] || { verdict=FAIL; fail=1; }
	echo "vm.sh: $nm: $verdict (${state[i]} at ${done_at[i]} s, boot finished at ${booted_at[i]:-?} s, $accel_name; console $console)"
	if [ "$ok" = 0 ]; then
		echo "---- last lines of $console:"
		tail -n 40 "$console" | tr -d '\r'
		echo "----"
	fi
done
exit "$fail"
