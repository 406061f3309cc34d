#!/bin/bash
# ab.sh OUT ROUNDS "NAME=TREE ..." [BENCH]: one server/local test binary ($TESTBIN) run
# round-robin from each tree (git archive of a commit); each run builds the sidecar from
# its own tree, so only the sidecar differs. One line per tree in OUT-NAME.txt.
out=$1; n=$2; trees=$3; bench=${4:-ColdPhases/heap=0MiB/spawner=true}
for r in $(seq $n); do
  for nt in $trees; do
    name=${nt%%=*}; d=${nt#*=}
    echo "# round $r $name $(date -u +%T) $(cat /proc/loadavg)" >> $out-load.txt
    (cd $d/server/local && $TESTBIN -test.run '^$' -test.bench "$bench" -test.benchtime=${BENCHTIME:-10x} 2>&1 | grep -E '^(Benchmark|goos|goarch|pkg|cpu)' >> $out-$name.txt)
  done
done
echo "# end $(date -u +%T) $(cat /proc/loadavg)" >> $out-load.txt
