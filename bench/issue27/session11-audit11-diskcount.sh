#!/bin/bash
# usage: BENCH=regex diskcount.sh DEV N BIN... : runs BIN's benchmark with TMPDIR on DEV's fs (a loop-mounted ext4 at /tmp/audit11/mnt);
# prints the device's writes, sectors and flushes over the whole run (setup included: subtract two N's).
DEV=$1; N=$2; shift 2
B=${BENCH:-'BenchmarkAppendExecLog$'}
ds() { awk -v d=$DEV '$3==d {print $8, $10, $19}' /proc/diskstats; }
for bin in "$@"; do
  read w0 s0 f0 < <(ds)
  out=$(cd /work/wt/audit11/server/sqlstore && TMPDIR=/tmp/audit11/mnt/tmp $bin -test.run '^$' -test.bench "$B" -test.benchtime ${N}x 2>&1 | grep Bench)
  read w1 s1 f1 < <(ds)
  echo "$(basename $bin) N=$N writes $((w1-w0)) sectors $((s1-s0)) flushes $((f1-f0))  | $out"
done
