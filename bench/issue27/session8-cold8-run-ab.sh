#!/bin/bash
# ab.sh OUT ROUNDS BENCH: interleaved base (/tmp/c8/base-tree) and new (/work/wt/cold8) runs
out=$1; n=$2; bench=${3:-ColdPhases/heap=0MiB/spawner=true}
for r in $(seq $n); do
  for t in base new; do
    d=/work/wt/cold8; [ $t = base ] && d=/tmp/c8/base-tree
    echo "# round $r $t $(date -u +%T) $(uptime | sed 's/.*load/load/')" >> $out-load.txt
    (cd $d/server/local && ${TESTBIN:-/tmp/cold8-m.test} -test.run '^$' -test.bench "$bench" -test.benchtime=10x 2>&1 | grep -E '^(Benchmark|goos|goarch|pkg|cpu)' >> $out-$t.txt)
  done
done
echo "# end $(date -u +%T) $(uptime | sed 's/.*load/load/')" >> $out-load.txt
