#!/bin/bash
# jbdcount.sh: journal commits of a sandbox's ext4 disk per 4 KiB write+read, and the sidecar's flush syscalls, before and after (real server, pool off)
export HOME=/tmp/cpu27/home
for v in before after; do
  bin=/tmp/cpu27/bin-$v
  BOXKITE_SERVER_WARM_POOL=0 BOXKITE_SERVER_ADMIN_LISTEN=127.0.0.1:21602 $bin/boxkite up --port 21600 --bastion-port 21601 > /tmp/cpu27/jbd-up.log 2>&1 || { cat /tmp/cpu27/jbd-up.log; exit 1; }
  export BK_KEY=$(sed -n "s/api_key = '\(.*\)'/\1/p" $HOME/.boxkite/local.toml)
  /tmp/cpu27/filesloop/filesloop -url http://127.0.0.1:21600 -n 200 -pause 5s -after 3s > /tmp/cpu27/jbd-$v.loop &
  sleep 3.5
  dev=$(losetup -a | grep "/tmp/cpu27/home/.*/sandboxes/.*disk.img" | cut -d: -f1)
  srv=$(pgrep -f "^$bin/boxkite-server")
  init=$(pgrep -P $srv -f "boxkite-sidecar init")
  sc=$(pgrep -P $init -f "sidecar serve")
  strace -f -qq -c -e trace=fsync,fdatasync,syncfs,sync_file_range -p $sc -o /tmp/cpu27/jbd-$v.strace &
  st=$!
  strace -f -qq -c -e trace=fsync,fdatasync,syncfs,sync_file_range -p $srv -o /tmp/cpu27/jbd-$v.server.strace &
  st2=$!
  sleep 1
  a=$(head -1 /proc/fs/jbd2/$(basename $dev)-*/info | cut -d' ' -f1)
  while [ ! -s /tmp/cpu27/jbd-$v.loop ]; do sleep 0.2; done
  b=$(head -1 /proc/fs/jbd2/$(basename $dev)-*/info | cut -d' ' -f1)
  kill -INT $st $st2; wait
  echo "$v: $dev journal commits over 200 writes+reads (and the periodic ones): $((b-a)); $(cat /tmp/cpu27/jbd-$v.loop)"
  echo "$v: the sidecar's ($sc) flush syscalls:"; cat /tmp/cpu27/jbd-$v.strace
  echo "$v: the server's ($srv) flush syscalls:"; cat /tmp/cpu27/jbd-$v.server.strace
  $bin/boxkite down --yes >/dev/null 2>&1
done
