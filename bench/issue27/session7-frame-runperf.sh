#!/bin/bash
# the server process's context switches, CPU and faults over one bench (same workload), base vs new
set -u
for i in 1 2; do for v in base new; do
  export HOME=/tmp/frame/home-$v; mkdir -p $HOME
  bk=/tmp/frame/bin$v/boxkite
  BOXKITE_SERVER_WARM_POOL=0 $bk up --port 18671 --bastion-port 12671 > /tmp/frame/up-$v-p$i.txt 2>&1 || { tail -5 /tmp/frame/up-$v-p$i.txt; continue; }
  pid=$(ss -ltnpH 'sport = :18671' | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)
  perf stat -x, -e context-switches,task-clock,page-faults -p $pid -o /tmp/frame/perf-$v-$i.txt &
  pp=$!
  $bk bench --sandboxes 2 --execs 200 --concurrency 1 --json > /tmp/frame/benchp-$v-$i.json 2>/dev/null
  kill -INT $pp; wait $pp
  $bk down --yes > /dev/null 2>&1
  echo "$v $i load $(cut -d' ' -f1-3 /proc/loadavg) pid $pid: $(grep -v '^#' /tmp/frame/perf-$v-$i.txt | grep . | cut -d, -f1,3 | tr '\n' ' ')"
done; done
