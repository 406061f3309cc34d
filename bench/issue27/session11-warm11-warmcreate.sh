#!/bin/bash
# BenchmarkWarmCreateFirstExec, base/new test binaries alternated (6 pairs, -benchtime 6x); sidecar of base for both
cd /work/wt/warm11/server
export BOXKITE_TEST_SIDECAR=/tmp/warm11/base/boxkite-sidecar
for i in 1 2 3 4 5 6; do for v in base new; do
  echo "$v $i $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> /tmp/warm11/warmcreate-load.txt
  /tmp/warm11/srv-$v.test -test.run '^$' -test.bench BenchmarkWarmCreateFirstExec -test.benchtime 6x -test.count 1 2>&1 | grep -E '^Benchmark|^goos|^goarch|^pkg|^cpu' >> /tmp/warm11/warmcreate-$v.txt
done; done
