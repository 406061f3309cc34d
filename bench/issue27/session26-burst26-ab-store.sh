#!/bin/bash
# interleaved rounds of the store benchmarks, old (d31e238d) and new (the statement cache)
cd /tmp/burst26
for i in 1 2 3 4 5 6 7 8; do
  for v in old new; do
    echo "# round $i $v load $(cut -d' ' -f1 /proc/loadavg)" >> store-$v.txt
    ./sqlstore-$v.test -test.run XXX -test.bench 'SandboxLifecycle|^BenchmarkSandbox$|APIKeyByHash|AppendExecLog$' -test.benchmem -test.benchtime 300x -test.count 1 2>&1 | grep Benchmark >> store-$v.txt
  done
done
