#!/bin/bash
# sb-cost.sh N: what one tmpfs superblock costs the kernel, by slab cache,
# against one bind mount of a directory (no superblock): N of each in a
# private mount namespace, /proc/slabinfo and /proc/meminfo diffed.
N=${1:-200}
snap() { sync; echo 3 > /proc/sys/vm/drop_caches; sleep 1; awk 'NR>2 {print $1, $2*$4/1024}' /proc/slabinfo > $1.slab; grep -E '^(Slab|SUnreclaim|Percpu|MemAvailable):' /proc/meminfo > $1.mem; }
diffit() { join <(sort $1.slab) <(sort $2.slab) | awk -v n=$N '{d=($3-$2)/n; if (d>0.2||d<-0.2) printf "  %-28s %+.2f KiB\n", $1, d}' | sort -k2 -g -r | head -12; join <(sort $1.mem) <(sort $2.mem) | awk -v n=$N '{printf "  %s %+.2f KiB\n", $1, ($4-$2)/n}'; }
D=/tmp/idlemem6/sbprobe; mkdir -p $D/src
unshare -m --propagation private bash -c "
  $(declare -f snap diffit); N=$N
  snap $D/a
  for i in \$(seq $N); do mkdir -p $D/t\$i; mount -t tmpfs -o size=4k,mode=0555 tmpfs $D/t\$i; done
  snap $D/b
  echo 'tmpfs superblock:'; diffit $D/a $D/b
  for i in \$(seq $N); do umount $D/t\$i; done
  snap $D/c
  for i in \$(seq $N); do mount --bind $D/src $D/t\$i; mount -o remount,bind,ro,nosuid,nodev,noexec $D/t\$i; done
  snap $D/d
  echo 'bind mount:'; diffit $D/c $D/d
"
rm -rf $D
