#!/bin/bash
# BenchmarkWarmCreateFirstExec, base/new test binaries alternated (6 pairs, -benchtime 6x); one sidecar binary for both
cd /work/wt/warm12/server
export BOXKITE_TEST_SIDECAR=/tmp/warm12/boxkite-sidecar
for i in 1 2 3 4 5 6; do for v in base new; do
  echo "$v $i $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> /tmp/warm12/warmcreate-load.txt
  /tmp/warm12/srv-$v.test -test.run '^$' -test.bench BenchmarkWarmCreateFirstExec -test.benchtime 6x -test.count 1 2>&1 | grep -E '^Benchmark|^goos|^goarch|^pkg|^cpu|FAIL|panic' >> /tmp/warm12/warmcreate-$v.txt
done; done
echo done >> /tmp/warm12/warmcreate-load.txt
