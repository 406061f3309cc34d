#!/bin/bash
# usage: diskcount-server.sh DEV N BENCH VARIANT... : BENCH of the server package with TMPDIR on DEV's fs (loop ext4 at /tmp/audit11/mnt);
# the device's writes, sectors and flushes over the whole run, and perf's context switches and task-clock
DEV=$1; N=$2; B=$3; shift 3
ds() { awk -v d=$DEV '$3==d {print $8, $10, $19}' /proc/diskstats; }
for v in "$@"; do
  read w0 s0 f0 < <(ds)
  out=$(cd /work/wt/audit11/server && TMPDIR=/tmp/audit11/mnt/tmp perf stat -e context-switches,task-clock -x, -o /tmp/audit11/.psv /tmp/audit11/$v-server.test -test.run '^$' -test.bench "$B" -test.benchtime ${N}x 2>&1 | grep Bench)
  read w1 s1 f1 < <(ds)
  ps=$(awk -F, '/context-switches/{c=$1} /task-clock/{t=$1} END{print "cs", c, "task-ms", t}' /tmp/audit11/.psv)
  echo "$v N=$N writes $((w1-w0)) sectors $((s1-s0)) flushes $((f1-f0)) $ps load $(cut -d' ' -f1 /proc/loadavg) | $out"
done
