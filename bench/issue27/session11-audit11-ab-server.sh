#!/bin/bash
# interleaved base/new BenchmarkExecProxy and BenchmarkFilesProxy (server package), DB on the real disk (TMPDIR=/tmp, ext4 on vda)
OUT=$1; R=${2:-6}
cd /work/wt/audit11/server
for i in $(seq $R); do
  for v in base C; do
    echo "# $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $OUT-$v.txt
    /tmp/audit11/$v-server.test -test.run '^$' -test.bench 'BenchmarkExecProxy|BenchmarkFilesProxy' -test.benchmem -test.benchtime 800x >> $OUT-$v.txt 2>&1
  done
done
