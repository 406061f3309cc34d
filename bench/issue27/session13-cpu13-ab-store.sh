#!/bin/bash
# Interleaved base/new runs of BenchmarkConcurrentPlainCreates (1,000 creates from 100 goroutines),
# each with its process's CPU and context switches (GNU time). The database in /dev/shm (the host's
# disk was full during session 13), so fsyncs cost nothing here: the counts are CPU.
# usage: ab-sqlstore.sh OUTDIR PAIRS
set -u
out=$1; n=$2; d=/dev/shm/cpu13-tmp; mkdir -p $out
for i in $(seq 1 $n); do
  for v in base new; do
    echo "== $v $i $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $out/load.txt
    TMPDIR=$d /usr/bin/time -f "rusage $v user %U sys %S vol %w invol %c maxrss %M minflt %R" -a -o $out/rusage.txt \
      $d/sqlstore-$v.test -test.run '^$' -test.bench 'ConcurrentPlainCreates' -test.benchtime 1000x -test.benchmem -test.count 1 2>&1 | grep Benchmark >> $out/$v.txt
  done
done
