#!/usr/bin/env bash
# run.sh TESTBINARY [ARGS...]: boot a freshly booted Debian kernel in a VM
# of our own and run one statically linked binary in it, as root, with
# this host's cgroup layout mounted (session25-freshvm.md).
#
# The kernel is Debian's (apt-get download linux-image-<ver>), its vmlinuz
# cached under ~/.cache/boxkite-freshvm/<ver>. The initramfs holds
# busybox-static (apt), an init script written here, TESTBINARY at
# /bin/<its name> and any FRESHVM_EXTRA files in /bin. qemu-system-x86_64
# with KVM (TCG if KVM refuses or is PVM, said on stderr), 2 vCPUs, no network
# device, no disk: nothing leaves the VM but its serial console, which
# is printed here. The VM powers off when the binary returns; run.sh
# exits with the binary's exit status.
#
# Environment:
#   FRESHVM_KERNEL   package version, e.g. 6.12.118+deb12 or 6.1.0-50
#                    (default: what linux-image-6.12-amd64 depends on)
#   FRESHVM_SCRIPT   a sh script run in the VM instead of TESTBINARY ARGS;
#                    it gets BIN=/bin/<name of TESTBINARY> and ARGS as "$@"
#   FRESHVM_EXTRA    more static binaries (space-separated) put in /bin
#   FRESHVM_CPUS     vCPUs (2)           FRESHVM_MEM  memory (1024M)
#   FRESHVM_TIMEOUT  seconds before the VM is killed (3600)
#   FRESHVM_ACCEL    kvm or tcg (default: kvm if it can boot a stock kernel)
#   FRESHVM_CMDLINE  extra kernel arguments (default preempt=none: this
#                    host's preemption model; "" for Debian's voluntary)
#
# In the VM: /proc, /sys, /dev (devtmpfs), /tmp (tmpfs), and at
# /sys/fs/cgroup a tmpfs with the v1 hierarchies cpu, cpuacct, cpuset,
# memory, devices, freezer, blkio, pids, name=systemd and a cgroup2 at
# unified, each mounted only if the kernel offers it (one it refuses is
# reported and left out: Debian's 6.12 has no v1 memory or cpuset,
# CONFIG_MEMCG_V1 and CONFIG_CPUSETS_V1 are off). No hierarchy is mounted
# with favordynmods: the script may mount one to switch the kernel's
# mode (cgplacement-vm.sh does).
set -euo pipefail

if [[ $# -lt 1 ]]; then
	echo "usage: run.sh TESTBINARY [ARGS...]" >&2
	exit 2
fi
bin=$(readlink -f "$1")
shift
if ldd "$bin" >/dev/null 2>&1; then
	echo "run.sh: $bin is dynamically linked; build it with CGO_ENABLED=0" >&2
	exit 2
fi

need() {
	command -v "$1" >/dev/null || {
		echo "run.sh: $1 is missing: apt-get install $2" >&2
		exit 2
	}
}
need qemu-system-x86_64 qemu-system-x86
need busybox busybox-static
need cpio cpio
if ldd "$(command -v busybox)" >/dev/null 2>&1; then
	echo "run.sh: busybox is not static: apt-get install busybox-static" >&2
	exit 2
fi

ver=${FRESHVM_KERNEL:-}
if [[ -z $ver ]]; then
	ver=$(apt-cache depends linux-image-6.12-amd64 | sed -n 's/.*Depends: linux-image-\(.*\)-amd64$/\1/p' | head -1)
	[[ -n $ver ]] || {
		echo "run.sh: cannot resolve linux-image-6.12-amd64 (apt-get update?)" >&2
		exit 2
	}
fi
cache=${XDG_CACHE_HOME:-$HOME/.cache}/boxkite-freshvm/$ver
if [[ ! -f $cache/vmlinuz ]]; then
	mkdir -p "$cache"
	tmp=$(mktemp -d)
	(cd "$tmp" && apt-get download -q "linux-image-$ver-amd64" >/dev/null 2>&1) || {
		echo "run.sh: apt-get download linux-image-$ver-amd64 failed" >&2
		rm -rf "$tmp"
		exit 2
	}
	dpkg-deb --fsys-tarfile "$tmp"/linux-image-*.deb | tar -x -C "$tmp" ./boot
	cp "$tmp"/boot/vmlinuz-* "$cache/vmlinuz"
	cp "$tmp"/boot/config-* "$cache/config"
	basename "$tmp"/linux-image-*.deb >"$cache/package"
	rm -rf "$tmp"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/freshvm.XXXXXX")
trap 'rm -rf "$work"' EXIT
root=$work/root
mkdir -p "$root"/{bin,proc,sys,dev,tmp,etc}
cp "$(command -v busybox)" "$root/bin/busybox"
for a in $("$root/bin/busybox" --list); do
	[[ -e $root/bin/$a ]] || ln -s busybox "$root/bin/$a"
done
name=$(basename "$bin")
cp "$bin" "$root/bin/$name"
for f in ${FRESHVM_EXTRA:-}; do
	cp "$f" "$root/bin/$(basename "$f")"
done
{
	printf 'export BIN=/bin/%q\n' "$name"
	printf 'set --'
	printf ' %q' "$@"
	printf '\n'
} >"$root/etc/freshvm-args"
if [[ -n ${FRESHVM_SCRIPT:-} ]]; then
	cp "$FRESHVM_SCRIPT" "$root/etc/freshvm-script"
else
	printf '"$BIN" "$@"\n' >"$root/etc/freshvm-script"
fi
cat >"$root/init" <<'EOF'
#!/bin/sh
export PATH=/bin HOME=/tmp TMPDIR=/tmp
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
mount -t tmpfs -o mode=755 cgroup /sys/fs/cgroup
for c in cpu cpuacct cpuset memory devices freezer blkio pids none,name=systemd; do
	d=/sys/fs/cgroup/${c#none,name=}
	mkdir -p "$d"
	if ! mount -t cgroup -o "$c" cgroup "$d" 2>/dev/null; then
		echo "freshvm: v1 $c: the kernel refuses it, left out"
		rmdir "$d"
	fi
done
mkdir -p /sys/fs/cgroup/unified
mount -t cgroup2 cgroup2 /sys/fs/cgroup/unified
echo "freshvm: kernel $(uname -r) $(cat /proc/sys/kernel/version)"
echo "freshvm: cmdline $(cat /proc/cmdline)"
echo "freshvm: cpus $(grep -c ^processor /proc/cpuinfo), $(grep -m1 'model name' /proc/cpuinfo)"
echo "freshvm: $(dmesg | grep -m1 -i 'hypervisor detected' || echo 'no hypervisor detected')"
echo "freshvm: preempt $(cat /sys/kernel/debug/sched/preempt 2>/dev/null || dmesg | grep -m1 -i 'dynamic preempt' || echo '?')"
echo "freshvm: /proc/self/cgroup:" $(cat /proc/self/cgroup)
. /etc/freshvm-args
echo "freshvm: run"
sh /etc/freshvm-script "$@"
rc=$?
echo "freshvm: exit $rc"
poweroff -f
EOF
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet) >"$work/initramfs"

# KVM when it can run a stock kernel; this host's /dev/kvm is PVM
# (kvm_pvm, a nested "pagetable-based" KVM that runs a guest kernel not
# built for it by emulation): 6.12's zstd decompressor stops it with
# "KVM internal error ... emulation failure" (a BMI2 instruction) and
# 6.1's was still decompressing after 100 s. TCG then, and said so.
accel=${FRESHVM_ACCEL:-}
if [[ -z $accel ]]; then
	accel=kvm
	if [[ -d /sys/module/kvm_pvm ]]; then
		echo "run.sh: /dev/kvm is PVM (kvm_pvm), which cannot boot a stock kernel: TCG (emulated, every time is inflated; counts are not)" >&2
		accel=tcg
	elif ! echo quit | timeout 30 qemu-system-x86_64 -accel kvm -nodefaults -display none -monitor stdio -S >/dev/null 2>&1; then
		echo "run.sh: KVM refused: TCG (emulated, every time is inflated; counts are not)" >&2
		accel=tcg
	fi
fi
case $accel in
kvm) accel=(-accel kvm -cpu host) ;;
tcg) accel=(-accel tcg,thread=multi -cpu max) ;;
*)
	echo "run.sh: FRESHVM_ACCEL is kvm or tcg" >&2
	exit 2
	;;
esac
echo "run.sh: kernel linux-image-$ver-amd64 ($(cat "$cache/package")), accel ${accel[1]}" >&2
cmdline="console=ttyS0 rdinit=/init quiet loglevel=1 panic=-1 ${FRESHVM_CMDLINE-preempt=none}"
set +e
timeout "${FRESHVM_TIMEOUT:-3600}" qemu-system-x86_64 "${accel[@]}" \
	-M q35 -smp "${FRESHVM_CPUS:-2}" -m "${FRESHVM_MEM:-1024M}" \
	-nodefaults -no-user-config -display none -nic none -no-reboot \
	-serial stdio -monitor none \
	-kernel "$cache/vmlinuz" -initrd "$work/initramfs" -append "$cmdline" \
	</dev/null | stdbuf -o0 tr -d '\r' | tee "$work/console"
set -e
rc=$(sed -n 's/^freshvm: exit \([0-9]*\)$/\1/p' "$work/console" | tail -1)
if [[ -z $rc ]]; then
	echo "run.sh: the VM ended without the binary's exit status" >&2
	exit 1
fi
exit "$rc"
