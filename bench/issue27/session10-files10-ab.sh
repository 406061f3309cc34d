#!/bin/bash
out=/tmp/f10/ab2; mkdir -p $out
for i in $(seq 1 ${RUNS:-6}); do
  for v in base new2; do
    tag=ab2$v$i
    BOXKITE_TEST_SIDECAR=/tmp/f10/sc-$v F8_N=200 timeout 300 /tmp/f10/perfph.sh $tag >/dev/null 2>&1
    for ph in w r; do
      f=/tmp/f10/perf-$tag-sc-$ph.txt; g=/tmp/f10/perf-$tag-srv-$ph.txt
      tc=$(awk '/task-clock/{gsub(",","",$1); print $1}' $f); cs=$(awk '/context-switches/{gsub(",","",$1); print $1}' $f); pf=$(awk '/page-faults/{gsub(",","",$1); print $1}' $f)
      stc=$(awk '/task-clock/{gsub(",","",$1); print $1}' $g); scs=$(awk '/context-switches/{gsub(",","",$1); print $1}' $g)
      echo "BenchmarkJail/$ph 200 $(echo "$tc*1000/200" | bc -l | xargs printf %.1f) sc-cpu-us/op $(echo "$cs/200" | bc -l | xargs printf %.2f) sc-cs/op $(echo "$pf/200" | bc -l | xargs printf %.3f) sc-faults/op $(echo "$stc*1000/200" | bc -l | xargs printf %.1f) srv-cpu-us/op $(echo "$scs/200" | bc -l | xargs printf %.2f) srv-cs/op" >> $out/$v.txt
    done
    echo "$tag $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $out/log.txt
  done
done
