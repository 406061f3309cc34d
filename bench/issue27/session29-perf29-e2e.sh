#!/bin/bash
# interleaved: the same local.test (driver unchanged), the sidecar built
# by TestMain from the tree it runs in: base (before) or the worktree (after)
source /work/env29.sh
for r in $(seq 1 $1); do
  for v in before after; do
    if [ $v = before ]; then d=/tmp/bxk-perf29/base/server/local; else d=/work/wt/perf29/server/local; fi
    cd $d
    echo "# round $r $v $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> /tmp/bxk-perf29/e2e.log
    perf record -q -e context-switches -c 1 -g -o /tmp/bxk-perf29/e2e-$v-$r.data -- /tmp/bxk-perf29/local.test -test.run='^$' -test.bench='^BenchmarkCreateDeleteServer$' -test.benchtime=100x -test.count=1 2>&1 | grep ^Bench >> /tmp/bxk-perf29/e2e-$v.txt
  done
done
echo done >> /tmp/bxk-perf29/e2e.log
