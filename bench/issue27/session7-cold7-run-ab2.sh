#!/bin/bash
out=$1; n=$2
for r in $(seq $n); do
  uptime >> $out-load.txt
  (cd /work/wt/cold7-base/server/local && /tmp/cold7-base.test -test.run '^$' -test.bench 'ColdFirstExec/prepared=2' -test.benchtime=10x) | grep Benchmark >> $out-base.txt
  (cd /work/wt/cold7/server/local && /tmp/cold7-new2.test -test.run '^$' -test.bench 'ColdFirstExec/prepared=2' -test.benchtime=10x) | grep Benchmark >> $out-new.txt
done
uptime >> $out-load.txt
