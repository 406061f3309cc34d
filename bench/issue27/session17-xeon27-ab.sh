#!/bin/bash
# Interleaved before/after: the audit append and the exec round trip through the control plane.
o=/tmp/xeon27/ab; rm -rf $o; mkdir -p $o
for i in $(seq 8); do
  echo "$i $(date -u +%T) $(cut -d' ' -f1-3 /proc/loadavg)" >> $o/load.txt
  for v in before after; do
    (cd /work/wt/xeon27/server/sqlstore && /tmp/xeon27/sql-$v.test -test.run '^$' -test.bench 'AppendExecLog$' -test.benchtime 1000x -test.benchmem) | grep ^Bench >> $o/append-$v.txt
    (cd /work/wt/xeon27/server && /tmp/xeon27/server-$v.test -test.run '^$' -test.bench 'ExecProxy$' -test.benchtime 1000x -test.benchmem) | grep ^Bench >> $o/exec-$v.txt
  done
done
for v in before after; do
  (cd /work/wt/xeon27/server && /tmp/xeon27/server-$v.test -test.run '^$' -test.bench 'ExecProxy$' -test.benchtime 4000x -test.cpuprofile /tmp/xeon27/ab/cpu-exec-$v.pprof) | grep ^Bench >> $o/exec-prof-$v.txt
  (cd /work/wt/xeon27/server/sqlstore && /tmp/xeon27/sql-$v.test -test.run '^$' -test.bench 'AppendExecLogParallel$' -test.benchtime 20000x -test.benchmem -test.cpuprofile /tmp/xeon27/ab/cpu-par-$v.pprof) | grep ^Bench >> $o/par-$v.txt
done
echo done >> $o/load.txt
