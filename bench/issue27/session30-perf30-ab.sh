#!/bin/bash
# interleaved rounds of BenchmarkDeleteServer: before (main + the benchmark) and after (perf30)
source /work/env30.sh
out=/tmp/bxk-perf30/ab; rounds=$1; n=$2
for r in $(seq 1 $rounds); do
  for v in before after; do
    if [ $v = before ]; then cd /tmp/bxk-perf30/base/server/local; else cd /work/wt/perf30/server/local; fi
    echo "# round $r $v $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> $out/delete-ab.log
    /tmp/bxk-perf30/$v.test -test.run='^$' -test.bench='^BenchmarkDeleteServer$' -test.benchtime=${n}x -test.count=1 2>&1 | grep -E '^Bench|FAIL|panic' >> $out/$v.txt
  done
done
echo "# done $(date -u +%T)" >> $out/delete-ab.log
