#!/bin/bash
# Run in a private mount namespace: a 1 GiB sparse image formatted as boxkite's template, loop-mounted as a sandbox disk.
set -e
img=/tmp/cold27/disk.img
rm -f $img; truncate -s 1G $img
mkfs.ext4 -q -F -m 0 -b 4096 -O has_journal -E nodiscard,lazy_itable_init=1,lazy_journal_init=1,assume_storage_prezeroed=1 -J size=16 $img
loop=$(losetup --show -f $img); loop=${loop#/dev/}
mkdir -p /tmp/cold27/mnt
mount -t ext4 -o nosuid,nodev,noatime,errors=remount-ro /dev/$loop /tmp/cold27/mnt
trap "umount /tmp/cold27/dbg; umount /tmp/cold27/mnt; losetup -d /dev/$loop; rm -f $img" EXIT
mkdir -p /tmp/cold27/dbg; mount -t debugfs none /tmp/cold27/dbg
/tmp/cold27/probe/probe $loop $img /tmp/cold27/mnt $(cat /sys/block/$loop/dev)
