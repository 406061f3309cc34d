#!/bin/bash
# usage: prof.sh OUT BENCH_REGEX -- perf args...
out=$1; shift
cd /work/wt/serve8/server/local
/tmp/serve8/local.test -test.run '^$' -test.bench "${BENCH:-SidecarExec/sidecar\$}" -test.benchtime ${N:-480x} -test.count 1 > $out.bench 2>&1 &
tp=$!
for i in $(seq 100); do
  pid=$(ps -o pid= --ppid $tp -o args= | awk '/boxkite-sidecar init/{print $1}')
  [ -n "$pid" ] && break; sleep 0.2
done
echo sidecar pid $pid
sleep ${WARM:-1.5}; cp /proc/$pid/exe $out.bin
"$@" -p $pid -o $out -- sleep ${DUR:-3} 2>&1 | tail -30
wait $tp
grep Benchmark $out.bench
