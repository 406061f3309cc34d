#!/bin/bash
# kthreads-one.sh MKFSOPTS...: kernel threads (ppid 2) added by one loop+ext4
# disk made and mounted as the driver does, and left after its unmount.
set -eu
d=$(mktemp -d /var/tmp/kt12.XXXX)
trap 'umount $d/m 2>/dev/null||true; rm -rf $d' EXIT
truncate -s 10G $d/img
mkfs.ext4 -q -F -m 0 "$@" -E nodiscard,lazy_itable_init=1,lazy_journal_init=1,assume_storage_prezeroed=1 $d/img
kt() { ps -e -o pid=,ppid=,comm= | awk '$2==2{ $1="";$2=""; print substr($0,3)}' | sed -E 's/loop[0-9]+/loopN/g' | sort; }
kt > $d/before; mkdir $d/m
loop=$(losetup --direct-io=on -f --show $d/img)
mount -o nosuid,nodev,noatime,errors=remount-ro $loop $d/m
losetup -d $loop
sleep 1; kt > $d/after
echo "device $loop"; echo "added (+) / gone (-) after mount:"; diff $d/before $d/after | grep '^[<>]' | grep -v 'kworker/[0-9u]' || true
ps -e -o pid=,ppid=,comm= | awk '$2==2' | grep -E "$(basename $loop)|ext4|jbd2" | grep -v -- '-8$' | head
umount $d/m; sleep 1; kt > $d/gone
echo "after unmount vs before:"; diff $d/before $d/gone | grep '^[<>]' | grep -v 'kworker/[0-9u]' || echo "(none)"
