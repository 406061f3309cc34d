#!/bin/bash
out=$1; n=$2
for r in $(seq $n); do
  uptime >> $out-load.txt
  (cd /work/wt/cold7-lazy/server/local && /tmp/cold7-lazy.test -test.run '^$' -test.bench 'ColdPhases/heap=0MiB/spawner=true' -test.benchtime=10x) | grep Benchmark >> $out-base.txt
  (cd /work/wt/cold7/server/local && /tmp/cold7-switch.test -test.run '^$' -test.bench 'ColdPhases/heap=0MiB/spawner=true' -test.benchtime=10x) | grep Benchmark >> $out-new.txt
done
uptime >> $out-load.txt
