#!/bin/bash
# interleaved rounds of BenchmarkDeleteServer under a count of every context switch (perf29's method)
source /work/env30.sh
out=/tmp/bxk-perf30/cs; rounds=$1; n=$2; mkdir -p $out
for r in $(seq 1 $rounds); do
  for v in before after; do
    if [ $v = before ]; then cd /tmp/bxk-perf30/base/server/local; else cd /work/wt/perf30/server/local; fi
    echo "# round $r $v $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> $out/cs.log
    perf record -q -e context-switches -c 1 -g -o $out/$v-$r.data -- /tmp/bxk-perf30/$v.test -test.run='^$' -test.bench='^BenchmarkDeleteServer$' -test.benchtime=${n}x -test.count=1 2>&1 | grep -E '^Bench|FAIL|panic' >> $out/$v.txt
    perf script -i $out/$v-$r.data -F comm,pid,tid,ip,sym > $out/$v-$r.script 2>/dev/null
    python3 /work/wt/perf30/bench/issue27/session30-perf30-waits.py $out/$v-$r.script $n | sed "s/^/$v $r: /" >> $out/waits.txt
    rm -f $out/$v-$r.data
  done
done
echo "# done $(date -u +%T)" >> $out/cs.log
