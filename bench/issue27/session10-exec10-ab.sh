#!/bin/bash
# ab.sh OUTPREFIX ROUNDS: interleaved base/new runs of BenchmarkSidecarExec/sidecar (each building its sidecar from its tree)
out=$1; rounds=$2
for i in $(seq $rounds); do
  for v in base new; do
    if [ $v = base ]; then d=/tmp/exec10/base/server/local; else d=/tmp/exec10/new420/server/local; fi
    echo "# $v round $i $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $out-$v.txt
    (cd $d && /tmp/exec10/$v-local.test -test.run '^$' -test.bench "${BENCH:-SidecarExec/sidecar\$}" -test.benchtime ${N:-400x} -test.count 1 2>&1 | grep -E '^(Benchmark|goos|goarch|pkg|cpu)|FAIL|fail') >> $out-$v.txt
  done
done
