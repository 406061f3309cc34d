#!/bin/bash
# usage: run-ab.sh OUTPREFIX ROUNDS  — interleaves base and new ColdPhases runs
out=$1; n=$2
for r in $(seq $n); do
  uptime >> $out-load.txt
  (cd /work/wt/cold7-base/server/local && /tmp/cold7-base.test -test.run '^$' -test.bench 'ColdPhases/heap=0MiB/spawner=true' -test.benchtime=10x) | grep Benchmark >> $out-base.txt
  (cd /work/wt/cold7/server/local && /tmp/cold7-new.test -test.run '^$' -test.bench 'ColdPhases/heap=0MiB/spawner=true' -test.benchtime=10x) | grep Benchmark >> $out-new.txt
done
uptime >> $out-load.txt
