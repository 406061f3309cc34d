#!/bin/bash
# Interleaved rounds of BenchmarkColdPhases at three commits; each test
# binary builds the sidecar from its own worktree.
for r in 1 2 3 4 5 6; do
  for t in before s1 after; do
    d=/work/wt/createpath-$t; [ $t = after ] && d=/work/wt/createpath
    echo "# round $r $t $(uptime)" >> /tmp/cpbench/load.txt
    (cd $d/server/local && /tmp/cp-$t.test -test.run '^$' -test.bench 'ColdPhases' -test.benchtime=10x 2>&1 | grep -E '^(Benchmark|goos|goarch|pkg|cpu)' >> /tmp/cpbench/$t.txt)
  done
done
echo "# end $(uptime)" >> /tmp/cpbench/load.txt
