#!/bin/bash
# interleaved rounds: before (main's tree) and after (cold27), CreateDeleteServer and ColdPhases
out=/tmp/cold27/ab
mkdir -p $out
for r in 1 2 3 4 5 6 7 8; do
  for v in before after; do
    if [ $v = before ]; then dir=/tmp/cold27/before/server/local; else dir=/work/wt/cold27/server/local; fi
    (cd $dir && /tmp/cold27/local-$v.test -test.run '^$' -test.bench 'CreateDeleteServer$' -test.benchtime=60x -test.cpuprofile $out/cpu-cds-$v-$r.pprof >> $out/cds-$v.txt 2>/dev/null)
    (cd $dir && /tmp/cold27/local-$v.test -test.run '^$' -test.bench 'ColdPhases/heap=0MiB/spawner=true' -test.benchtime=40x >> $out/phases-$v.txt 2>/dev/null)
  done
  echo round $r $(date -u +%T) $(cut -d' ' -f1-3 /proc/loadavg) >> $out/rounds.txt
done
