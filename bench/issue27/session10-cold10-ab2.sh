#!/bin/bash
# ab2.sh OUT ROUNDS BENCH: interleaved runs of one server/local test binary (built
# from cold10) from the base tree (d5cabea) and cold10's: each builds the
# sidecar of its own tree, so only the sidecar differs.
out=$1; n=$2; bench=$3
for r in $(seq $n); do
  for t in base new; do
    d=/work/wt/cold10; [ $t = base ] && d=/tmp/cold10/basesrc
    echo "# round $r $t $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $out-load.txt
    (cd $d/server/local && /tmp/cold10/local.test -test.run '^$' -test.bench "$bench" -test.benchtime=10x 2>&1 | grep -E '^(Benchmark|goos|goarch|pkg|cpu)' >> $out-$t.txt)
  done
done
echo "# end $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $out-load.txt
