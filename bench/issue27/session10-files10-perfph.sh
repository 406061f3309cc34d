#!/bin/bash
# usage: perfph.sh TAG -> perf stat of the jailed sidecar for write and read phases (+ perf record if REC=1)
tag=$1; N=${F8_N:-200}
cd /work/wt/files10/f10tmp
rm -f /tmp/f10/go-* /tmp/f10/done-*
F8_N=$N ${RT:-/tmp/f10/rt.test} -test.run TestPhases -test.v > /tmp/f10/pp-$tag.log 2>&1 &
tp=$!
until grep -q PIDS /tmp/f10/pp-$tag.log; do sleep 0.2; done
self=$(grep -o 'self=[0-9]*' /tmp/f10/pp-$tag.log | cut -d= -f2)
for p in $(grep -o 'sidecars=\[[0-9 ]*' /tmp/f10/pp-$tag.log | sed 's/.*\[//'); do
  grep -q init /proc/$p/cmdline && sc=$p
done
for ph in w r; do
  perf stat -e task-clock,context-switches,page-faults,cpu-migrations -p $sc -o /tmp/f10/perf-$tag-sc-$ph.txt & s1=$!
  perf stat -e task-clock,context-switches,page-faults -p $self -o /tmp/f10/perf-$tag-srv-$ph.txt & s2=$!
  if [ -n "$REC" ]; then perf record -g -p $sc -o /tmp/f10/rec-$tag-$ph.data 2>/dev/null & s3=$!; fi
  sleep 1
  touch /tmp/f10/go-$ph
  until [ -e /tmp/f10/done-$ph ]; do sleep 0.05; done
  kill -INT $s1 $s2 $s3 2>/dev/null; wait $s1 $s2 $s3 2>/dev/null
done
wait $tp
echo "load $(cut -d' ' -f1-3 /proc/loadavg)" >> /tmp/f10/perf-$tag-sc-w.txt
