#!/bin/bash
# usage: phases.sh TAG  -> strace -c of the jailed sidecar (init) and test process, write and read phases
tag=$1; N=${F8_N:-100}
cd /work/wt/files10/f10tmp
rm -f /tmp/f10/go-* /tmp/f10/done-*
F8_N=$N /tmp/f10/rt.test -test.run TestPhases -test.v > /tmp/f10/ph-$tag.log 2>&1 &
tp=$!
until grep -q PIDS /tmp/f10/ph-$tag.log; do sleep 0.2; done
self=$(grep -o 'self=[0-9]*' /tmp/f10/ph-$tag.log | cut -d= -f2)
sc=""
for p in $(grep -o 'sidecars=\[[0-9 ]*' /tmp/f10/ph-$tag.log | sed 's/.*\[//'); do
  grep -q init /proc/$p/cmdline && sc=$p
done
for ph in w r; do
  strace -c -f -p $sc -o /tmp/f10/st-$tag-sc-$ph.txt 2>/dev/null & s1=$!
  strace -c -f -p $self -o /tmp/f10/st-$tag-srv-$ph.txt 2>/dev/null & s2=$!
  sleep 1.5
  touch /tmp/f10/go-$ph
  until [ -e /tmp/f10/done-$ph ]; do sleep 0.05; done
  kill -INT $s1 $s2; wait $s1 $s2 2>/dev/null
done
wait $tp
tail -2 /tmp/f10/ph-$tag.log
