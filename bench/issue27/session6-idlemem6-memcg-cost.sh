#!/bin/bash
# memcg-cost.sh N: the kernel memory one empty cgroup costs, by hierarchy:
# mkdir N cgroups, diff /proc/meminfo and /proc/slabinfo, rmdir them.
N=${1:-50}
slab() { awk -v c="$1" '$1==c {print $2*$4/1024}' /proc/slabinfo; }
mi() { awk -v k="$1:" '$1==k {print $2}' /proc/meminfo; }
for h in memory pids cpu freezer unified; do
  base=/sys/fs/cgroup/$h/idlemem6-probe
  mkdir -p $base
  sync; echo 3 > /proc/sys/vm/drop_caches; sleep 1
  k1=$(slab kmalloc-1k); s1=$(mi Slab); u1=$(mi SUnreclaim); p1=$(mi Percpu); a1=$(mi MemAvailable)
  for i in $(seq $N); do mkdir $base/c$i; done
  sleep 1
  k2=$(slab kmalloc-1k); s2=$(mi Slab); u2=$(mi SUnreclaim); p2=$(mi Percpu); a2=$(mi MemAvailable)
  for i in $(seq $N); do rmdir $base/c$i; done
  rmdir $base
  echo "$h: per cgroup KiB: kmalloc-1k $(( (${k2%.*}-${k1%.*})/N )) Slab $(( (s2-s1)/N )) SUnreclaim $(( (u2-u1)/N )) Percpu $(( (p2-p1)/N )) MemAvailable fell $(( (a1-a2)/N ))"
done
