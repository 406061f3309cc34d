#!/bin/bash
# crash-images.sh KIND ROUNDS: what a power cut leaves of a sandbox disk
# (KIND journal: the driver's ext4 with a 16 MiB journal; nojournal: the
# same without one). The image sits on a reflink XFS like the driver's clone
# pool, on a direct-I/O loop device, mounted as the driver mounts it; a
# workload churns metadata while a writer creates ack-N files and fsyncs each
# and its directory, logging N outside the image once fsync returned.
# ROUNDS times a reflink copy of the live image is taken (FICLONE waits for
# in-flight direct I/O: a crash that keeps every completed write), then
# checked: e2fsck -fn (clean?), e2fsck -p (what preen says), e2fsck -fy,
# then mounted read-only: every ack logged before the copy began must be
# there with its content.
set -u
kind=$1 rounds=$2
d=$(mktemp -d /var/tmp/crash12.XXXX)
cleanup() { kill $wl $wr 2>/dev/null; wait 2>/dev/null; umount $d/m $d/c 2>/dev/null; for i in 1 2 3 4 5; do umount $d/x 2>/dev/null && break; sleep 1; done; rm -rf $d; }
trap cleanup EXIT
truncate -s 3G $d/x.img; mkfs.xfs -q -f -m reflink=1 $d/x.img; mkdir $d/x $d/m $d/c; mount -o loop $d/x.img $d/x
j="-O has_journal -J size=16"; [ $kind = nojournal ] && j="-O ^has_journal"
truncate -s 1G $d/x/disk.img
mkfs.ext4 -q -F -m 0 $j -E nodiscard,lazy_itable_init=1,lazy_journal_init=1,assume_storage_prezeroed=1 $d/x/disk.img
loop=$(losetup --direct-io=on -f --show $d/x/disk.img)
mount -o nosuid,nodev,noatime,errors=remount-ro $loop $d/m; losetup -d $loop
# churn: small files made, appended, renamed, removed across 64 directories
( exec 2>/dev/null; i=0; while :; do i=$((i+1)); a=$d/m/w$((i % 64)); mkdir -p $a; head -c $((i % 9000)) /dev/urandom > $a/f$i; echo x >> $d/m/w$(((i+7) % 64))/f$((i-5)) 2>/dev/null; mv $a/f$((i-3)) $a/g$i 2>/dev/null; rm -f $d/m/w$(((i+31) % 64))/g$((i-40)) 2>/dev/null; done ) & wl=$!
python3 - $d/m $d/acked <<'PY' & wr=$!
import os, sys
m, log = sys.argv[1], sys.argv[2]
os.makedirs(m + "/acks", exist_ok=True)
n = 0
with open(log, "a", buffering=1) as lg:
    while True:
        n += 1
        p = f"{m}/acks/ack-{n}"
        fd = os.open(p, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
        os.write(fd, f"ack {n}\n".encode() * 50)
        os.fsync(fd); os.close(fd)
        dfd = os.open(m + "/acks", os.O_RDONLY); os.fsync(dfd); os.close(dfd)
        lg.write(f"{n}\n")
PY
until [ -s $d/acked ]; do sleep 0.5; done
clean=0 preen_ok=0 preen_fix=0 preen_manual=0 lost=0 mounted=0
for r in $(seq $rounds); do
	sleep 0.$((RANDOM % 9 + 1))
	acked=$(tail -1 $d/acked 2>/dev/null); acked=${acked:-0}
	cp --reflink=always $d/x/disk.img $d/x/c.img
	e2fsck -fn $d/x/c.img > $d/fsck-n.txt 2>&1; rn=$?
	e2fsck -p $d/x/c.img > $d/fsck-p.txt 2>&1; rp=$?
	e2fsck -fy $d/x/c.img > $d/fsck-y.txt 2>&1; ry=$?
	[ $rn = 0 ] && clean=$((clean+1))
	case $rp in 0) preen_ok=$((preen_ok+1));; 1|2|3) preen_fix=$((preen_fix+1));; *) preen_manual=$((preen_manual+1));; esac
	miss=0
	if mount -o ro,loop $d/x/c.img $d/c 2>/dev/null; then
		mounted=$((mounted+1))
		miss=$(python3 -c "
import sys
d, n = sys.argv[1], int(sys.argv[2] or 0)
bad = []
for i in range(1, n + 1):
    try:
        ok = open(d + '/ack-%d' % i).read().startswith('ack %d' % i)
    except OSError:
        ok = False
    if not ok:
        bad.append(i)
print(len(bad), *bad[:5])
" $d/c/acks "$acked")
		umount $d/c
	else miss=$acked; fi
	lost=$((lost+${miss%% *}))
	echo "round $r: acked before copy $acked; fsck -fn $rn, -p $rp, -fy $ry; acks missing after -fy $miss; -p said: $(tail -1 $d/fsck-p.txt | cut -c1-110)"
	rm -f $d/x/c.img
done
echo "$kind: $rounds crash images: clean (fsck -fn 0) $clean; preen: nothing to do $preen_ok, fixed $preen_fix, needs a manual fsck $preen_manual; mounted after -fy $mounted; acknowledged files lost $lost"
