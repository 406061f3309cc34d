#!/bin/bash
# Interleaved BenchmarkColdFirstExec/prepared=0 (and ColdPhases) base/new, ROUNDS rounds.
# usage: abbench.sh OUTDIR ROUNDS BENCHRE BENCHTIME
set -u
out=$1; n=$2; re=$3; bt=$4; mkdir -p $out
for i in $(seq 1 $n); do
  for v in base new; do
    dir=/work/wt/tmpl14/server/local; [ $v = base ] && dir=/tmp/tm14/basewt/server/local
    echo "# round $i $v $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $out/load.txt
    (cd $dir && /tmp/tm14/local-$v.test -test.run '^$' -test.bench "$re" -test.benchtime $bt -test.count 1) >> $out/$v.txt 2>&1
  done
done
