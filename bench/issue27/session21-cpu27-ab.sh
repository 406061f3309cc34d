#!/bin/bash
# ab.sh: 8 interleaved rounds of BenchmarkFilesDisk's two variants (order alternating), 300 round trips each.
out=/tmp/cpu27/ab40.txt; : > $out
cd /work/wt/cpu27/server
for i in $(seq 1 40); do
  if [ $((i % 2)) = 1 ]; then order="sidecar-fsync host-flush"; else order="host-flush sidecar-fsync"; fi
  for v in $order; do
    echo "# round $i $v load $(cut -d' ' -f1 /proc/loadavg)" >> $out
    /tmp/cpu27/server.test -test.run '^$' -test.bench "BenchmarkFilesDisk/$v\$" -test.benchtime 100x -test.benchmem 2>/dev/null | grep -E '^(Benchmark|goos|goarch|pkg|cpu)' >> $out
  done
done
