#!/bin/bash
# interleaved rounds of BenchmarkCgroupPlacement, one mode per process
out=$1; rounds=$2; n=$3
for r in $(seq 1 $rounds); do
  for m in old thread jail self; do
    echo "# round $r mode $m $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> $out.log
    /tmp/bxk-perf29/jail.test -test.run='^$' -test.bench="BenchmarkCgroupPlacement/^${m}\$" -test.benchtime=${n}x -test.count=1 >> $out 2>&1
  done
done
