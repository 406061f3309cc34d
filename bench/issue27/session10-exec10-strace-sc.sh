#!/bin/bash
# strace-sc.sh TESTBIN DIR OUT [BENCH]: strace -c -f the benchmark's (second, b.N=490) sidecar for 3 s mid-run
bin=$1; dir=$2; out=$3; bench=${4:-SidecarExec/sidecar\$}
(cd $dir && exec $bin -test.run '^$' -test.bench "$bench" -test.benchtime 490x -test.count 1 > $out.bench 2>&1) &
tp=$!
sc=
for i in $(seq 600); do
  k=$(pgrep -P $tp -x boxkite-sidecar | sort -n)
  [ $(echo "$k" | grep -c .) -ge 2 ] && sc=$(echo "$k" | tail -1) && break
  sleep 0.05
done
echo "sidecar $sc" >&2
sleep 0.3
timeout -s INT ${SECS:-2} strace -c $(for t in /proc/$sc/task/*; do echo -p ${t##*/}; done) -o $out
wait $tp
