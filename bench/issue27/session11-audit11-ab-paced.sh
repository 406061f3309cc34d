#!/bin/bash
# interleaved base (main + the paced benchmark, 3688412) / new (bdf617b) runs of the sqlstore audit benchmarks, DB on the real disk (TMPDIR=/tmp, ext4 on vda)
OUT=$1; R=${2:-6}
cd /work/wt/audit11/server/sqlstore
for i in $(seq $R); do
  for v in base C2; do
    echo "# $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $OUT-$v.txt
    /tmp/audit11/$v-sqlstore.test -test.run '^$' -test.bench 'BenchmarkAppendExecLogPaced|BenchmarkAppendExecLog$' -test.benchmem -test.benchtime 300x >> $OUT-$v.txt 2>&1
  done
done
