#!/bin/bash
# ab.sh OUTPREFIX ROUNDS NEWDIR: interleaved base/new runs of SidecarExec/sidecar
out=$1; rounds=$2; new=${3:-/work/wt/serve8/server/local}
for i in $(seq $rounds); do
  for v in base new; do
    if [ $v = base ]; then d=/tmp/serve8/base/server/local; else d=$new; fi
    echo "# $v round $i $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $out-$v.txt
    (cd $d && /tmp/serve8/local.test -test.run '^$' -test.bench "${BENCH:-SidecarExec/sidecar\$}" -test.benchtime ${N:-300x} -test.count 1 2>&1 | grep -E '^(Benchmark|goos|goarch|pkg|cpu)') >> $out-$v.txt
  done
done
