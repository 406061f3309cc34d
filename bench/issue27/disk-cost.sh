#!/bin/bash
# disk-cost.sh KIND N: what N sandbox disks of one kind cost the host, with
# no jail: kernel threads, slab, and meminfo, before and after (drop_caches
# on both sides). As root, on a scratch directory; cleans up after itself.
#   ext4     a loop device (direct I/O, autoclear) per disk, ext4 with a
#            16 MiB journal, mounted errors=remount-ro,noatime (the driver's)
#   ext4nj   the same without a journal (what the journal costs)
#   xfsdir   one shared XFS (prjquota) and a directory with a project quota
#            per disk, bind-mounted (the alternative of issue 27 item 4);
#            needs CONFIG_XFS_QUOTA, which this machine's kernel lacks
#   ext4dir  the same on one shared ext4 with the project feature (needs
#            CONFIG_QFMT_V2, which this kernel lacks too)
#   btrfssub one shared btrfs with qgroups, a subvolume with a qgroup limit
#            per disk, bind-mounted (needs btrfs-progs)
set -eu
kind=$1 n=$2 size=${SIZE:-10G}
dir=$(mktemp -d /var/tmp/diskcost.XXXX)
snap() {
	echo 3 >/proc/sys/vm/drop_caches; sleep 2
	awk '/^(MemAvailable|Slab|SUnreclaim|KernelStack|PageTables|Buffers|Cached):/{printf "%s=%s ", $1, $2}' /proc/meminfo
	awk 'NR>2{s+=$2*$4} END{printf "slab_active=%d ", s/1024}' /proc/slabinfo
	echo "kthreads=$(ps -e -o pid=,ppid= | awk '$2==2' | wc -l)"
}
cleanup() {
	for m in "$dir"/m*; do umount "$m" 2>/dev/null || true; done
	umount "$dir/pool" 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT
case $kind in
ext4 | ext4nj)
	j="-O has_journal -J size=16"; [ "$kind" = ext4nj ] && j="-O ^has_journal"
	truncate -s "$size" "$dir/t.img"
	mkfs.ext4 -q -F -m 0 $j -E nodiscard,lazy_itable_init=1,lazy_journal_init=1,assume_storage_prezeroed=1 "$dir/t.img"
	;;
xfsdir)
	truncate -s 400G "$dir/pool.img"
	mkfs.xfs -q -f -K -m reflink=1 -l size=64m "$dir/pool.img"
	mkdir "$dir/pool"
	mount -o loop,prjquota,noatime "$dir/pool.img" "$dir/pool"
	;;
btrfssub)
	truncate -s 400G "$dir/pool.img"
	mkfs.btrfs -q -f "$dir/pool.img"
	mkdir "$dir/pool"
	mount -o loop,noatime "$dir/pool.img" "$dir/pool"
	btrfs quota enable "$dir/pool"
	;;
ext4dir)
	truncate -s 400G "$dir/pool.img"
	mkfs.ext4 -q -F -m 0 -O quota,project -E nodiscard,lazy_itable_init=1,lazy_journal_init=1 "$dir/pool.img"
	mkdir "$dir/pool"
	mount -o loop,prjquota,noatime "$dir/pool.img" "$dir/pool"
	;;
esac
before=$(snap)
for i in $(seq "$n"); do
	mkdir "$dir/m$i"
	case $kind in
	ext4 | ext4nj)
		cp --sparse=always "$dir/t.img" "$dir/$i.img"
		loop=$(losetup --direct-io=on -f --show "$dir/$i.img")
		mount -o nosuid,nodev,noatime,errors=remount-ro "$loop" "$dir/m$i"
		losetup -d "$loop" # autoclear once unmounted
		;;
	ext4dir)
		mkdir "$dir/pool/$i"
		chattr +P -p $((1000 + i)) "$dir/pool/$i"
		setquota -P $((1000 + i)) 0 $((${size%G} * 1024 * 1024)) 0 0 "$dir/pool"
		mount --bind -o nosuid,nodev,noatime "$dir/pool/$i" "$dir/m$i"
		;;
	btrfssub)
		btrfs -q subvolume create "$dir/pool/$i"
		btrfs qgroup limit "$size" "$dir/pool/$i"
		mount --bind -o nosuid,nodev,noatime "$dir/pool/$i" "$dir/m$i"
		;;
	xfsdir)
		mkdir "$dir/pool/$i"
		xfs_quota -x -c "project -s -p $dir/pool/$i $((1000 + i))" -c "limit -p bhard=$size $((1000 + i))" "$dir/pool" >/dev/null
		mount --bind -o nosuid,nodev,noatime "$dir/pool/$i" "$dir/m$i"
		;;
	esac
	echo x >"$dir/m$i/f" && sync -f "$dir/m$i/f"
done
after=$(snap)
echo "kind=$kind n=$n size=$size"
echo "before: $before"
echo "after:  $after"
python3 - "$n" "$before" "$after" <<'PY'
import sys
n=int(sys.argv[1])
p=lambda s: {k.rstrip(':'): int(v) for k, v in (x.split('=') for x in s.split())}
b, a = p(sys.argv[2]), p(sys.argv[3])
print(" ".join(f"{k}={(a[k]-b[k])/n:+.1f}" for k in a), "(KiB or count per disk)")
PY
