#!/bin/bash
# Writes through the loop device of one fresh disk (clone of the template, attach, mount,
# [base: mkdir + chown of workspace and outputs], syncfs, unmount) ROUNDS times each, alternated.
# usage: dirw.sh ROUNDS
set -u
img=/tmp/tm14/h-new/server/cow/images
plain=/tmp/tm14/h-new/server/cow/dirw/plain.img
laid=/tmp/tm14/h-new/server/cow/dirw/laid.img
w=/tmp/tm14/h-new/server/cow/dirw; mkdir -p $w/mnt
for i in $(seq 1 $1); do for v in base new; do
  t=$plain; [ $v = new ] && t=$laid
  cp --reflink=always $t $w/d.img
  dev=$(losetup -f --show $w/d.img); b=/sys/block/$(basename $dev)/stat
  read -r _ _ _ _ wi0 _ ws0 _ < $b
  mount -o nosuid,nodev,noatime,errors=remount-ro $dev $w/mnt
  if [ $v = base ]; then mkdir $w/mnt/workspace $w/mnt/outputs; chown 1001:1001 $w/mnt/workspace $w/mnt/outputs; fi
  sync -f $w/mnt; umount $w/mnt
  read -r _ _ _ _ wi1 _ ws1 _ < $b
  losetup -d $dev; rm $w/d.img
  echo "$v write_ios $((wi1-wi0)) write_sectors $((ws1-ws0))"
done; done
