#!/bin/bash
# runab.sh ROUNDS BENCH N : interleaved before/after runs; each test runs from its own tree (the sidecar is built from it)
r=$1; bench=$2; n=$3; tag=$4
for i in $(seq $r); do
  for v in before after; do
    if [ $v = before ]; then d=/tmp/exec6/before/server/local; else d=/work/wt/exec6/server/local; fi
    echo "# $v round $i $(uptime)" >> /tmp/exec6/load-$tag.txt
    (cd $d && /tmp/exec6/$v.test -test.run '^$' -test.bench "$bench" -test.benchtime ${n}x -test.benchmem) | grep -E '^Benchmark|^goos|^goarch|^pkg|^cpu' >> /tmp/exec6/$v-$tag.txt
  done
done
